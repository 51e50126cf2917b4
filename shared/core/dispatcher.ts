import type { FlushReport } from '../model/page-api.ts';
import type { BatchRoute } from '../model/ports.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow } from '../model/row.ts';
import {
  type Expectation,
  NAME_RETENTION_MS,
  type RowCursor,
  type RowKey,
} from '../model/store.ts';
import { type BatchGroup, gather, planBatchRoute, scanLimit } from '../plan/batch-groups.ts';
import type { RecordSeen } from '../plan/claim.ts';
import { NO_CREDENTIALS } from '../plan/classify.ts';
import { isRowInFlight } from '../plan/in-flight.ts';
import { leaseEnd } from '../plan/lease.ts';
import { planResumeHeld } from '../plan/manual-actions.ts';
import { overtaken } from '../plan/overtaken.ts';
import { corruptInFlight, planQuarantine } from '../plan/quarantine.ts';
import { selectTurns, targetKey } from '../plan/select.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { CoreDeps } from './config.ts';
import { Flush } from './flush.ts';
import { FlushStop } from './flush-stop.ts';
import { recoverOrphanIntents } from './orphan-intents.ts';
import { lookupPredecessorsOf } from './predecessors.ts';
import { send } from './send.ts';

/**
 * The flush loop of one holder for one owner (SPEC §4–§8, §11): select → claim → send →
 * settle, passes repeated while they unblock successors. Environment-free: every effect goes
 * through the ports in `deps`, held with the flush's state by one {@link Flush}.
 */
export async function runFlush(
  deps: CoreDeps,
  owner: string,
  force: boolean,
): Promise<FlushReport> {
  const flush = new Flush(deps, owner, force);
  try {
    // A pass that claimed something may have unblocked successors: go again until quiet.
    while ((await runPass(flush)) > 0 && flush.stop === undefined) {
      flush.waiting.clear();
    }
  } catch (error) {
    if (!(error instanceof FlushStop)) throw error;
    flush.stop = error.reason;
  }
  if (flush.stop !== undefined) flush.report.stopped = flush.stop;
  // What still waits: rows deferred by this flush and rows the last pass found on backoff.
  const waiting = new Map([...flush.waiting, ...flush.deferred]);
  flush.report.remaining = waiting.size;
  flush.report.nextAttemptAt = waiting.size === 0 ? null : Math.min(...waiting.values());
  // The store as configured: a failed prune is only a warning, with the store's own error.
  await deps.store
    .prune(owner, {
      maxReceipts: deps.receipts.maxCount,
      olderThan: deps.clock.now() - deps.receipts.maxAgeMs,
      maxLedger: deps.conflictLedgerMax,
      namesOlderThan: deps.clock.now() - NAME_RETENTION_MS,
    })
    .catch((error: unknown) => deps.logger?.warn('prune failed', { error: String(error) }));
  return flush.report;
}

/**
 * One scan over the owner's rows in queue order; returns how many rows it claimed, converted,
 * released or lost to another holder's claim (those the next pass looks at again).
 */
async function runPass(flush: Flush): Promise<number> {
  const { deps } = flush;
  const claimedBefore = flush.report.claimed;
  const lostBefore = flush.lost.size;
  let converted = 0;
  const active = new Set<Promise<void>>();
  // Rows sent alone to an origin that had not answered yet (§15.1).
  const alone = new Set<Promise<void>>();
  let after: RowCursor | undefined;
  // Every row of the pass so far, by record: a record's turn is decided over all of its rows seen
  // (§6.1), whichever batch of the scan each came in.
  const known = new Map<string, Map<string, Observed>>();
  // The pass's records, and those of them read whole once a claim of one was lost.
  const pass: PassRecords = { known, readWhole: new Set() };
  // Records a conversion or a release rewrote in this pass: what was seen of them is stale.
  const closed = new Set<string>();
  // A scan reads at least a full batch's worth of rows (§15.1).
  const limit = scanLimit(deps.batchSize, deps.batch);
  // What holds rows wherever the scan would find it is read first, by index, before any row
  // goes: a value on the wire that failed to parse holds its record — every record, when its own
  // cannot be read — and an orphan intent every later row of its collection (§6.1, G4). The
  // queue itself is then read batch by batch, each sent before the next is read, so the first
  // claim does not wait for the whole queue (§7, §19).
  for (const key of await readHolds(flush)) {
    converted++;
    closed.add(key);
  }
  for (;;) {
    const raws = await flush.store.scan(flush.owner, { after, limit });
    if (raws.length === 0) break;
    const last = raws[raws.length - 1] as { savedAt: number; id: string };
    after = { savedAt: last.savedAt, id: last.id };
    const rows = await decodeBatch(flush, raws);
    const { touched, predecessor, blockedPredecessors, rewritten } = await look(flush, pass, rows);
    for (const key of rewritten) closed.add(key);
    converted += rewritten.length;
    const now = deps.clock.now();
    const records = [...touched]
      .filter((key) => !closed.has(key))
      .map((key) => [...known.get(key)!.values()].map(({ row }) => row));
    const candidates = selectTurns(
      records,
      { now, leaseMs: deps.leaseMs, force: flush.force, recovered: flush.recovered },
      predecessor,
      flush.busyTargets,
    ).filter(
      (row) =>
        !flush.attempted.has(row.id) &&
        !isUnreadSinceLost(flush, pass, targetKey(row)) &&
        !flush.isHeldByOrphan(row) &&
        !flush.isHeldByCorrupt(row, now),
    );
    for (const row of candidates)
      flush.seen.set(row.id, recordSeen(row, known.get(targetKey(row))!, blockedPredecessors));
    noteWaiting(flush, rows, now);
    const groups = new Map<string, BatchGroup>();
    for (const row of candidates) {
      if (flush.stop !== undefined) break;
      // Twice as many sends in hand as may be on the network: the next rows are claimed (and
      // the last ones settled) while requests are in flight, so a slot never waits on IndexedDB.
      while (active.size >= 2 * deps.concurrency) await Promise.race(active);
      if (flush.stop !== undefined) break;
      const key = targetKey(row);
      // At most one row of a record in flight, and so in a batch (G4).
      if (flush.busyTargets.has(key)) continue;
      let route = batchRouteOf(flush, row);
      // Until a row's origin has answered, at most `concurrency` rows go there alone: the first
      // answer may name a batch endpoint the rest can share (§15.1).
      while (route === 'unknown' && alone.size >= deps.concurrency) {
        await Promise.race(alone);
        route = batchRouteOf(flush, row);
      }
      if (flush.stop !== undefined) break;
      flush.busyTargets.add(key);
      flush.attempted.add(row.id);
      const observed = known.get(key)!.get(row.id)!;
      if (route === 'unknown') {
        const task = start([observed]);
        alone.add(task);
        void task.finally(() => alone.delete(task));
      } else if (route !== undefined)
        for (const group of gather(groups, route, observed)) start(group.rows, group.route);
      // A row that travels alone is a group of one.
      else start([observed]);
    }
    // Rows gathered but not sent (the flush stopped) go back with their records unclaimed.
    for (const group of groups.values()) {
      if (flush.stop === undefined) start(group.rows, group.route);
      else for (const { row } of group.rows) flush.busyTargets.delete(targetKey(row));
    }
    if (flush.stop !== undefined || raws.length < limit) break;
  }
  await Promise.all(active);
  return flush.report.claimed - claimedBefore + converted + flush.lost.size - lostBefore;

  /** Sends a group of rows as one task; their records are free again once it has settled. */
  function start(rows: readonly Observed[], route?: BatchRoute): Promise<void> {
    const task = send(flush, rows, route)
      .catch((error: unknown) => {
        flush.stop ??= error instanceof FlushStop ? error.reason : 'storage';
        if (!(error instanceof FlushStop))
          deps.logger?.error('send failed', { error: String(error) });
      })
      .finally(() => {
        for (const { row } of rows) flush.busyTargets.delete(targetKey(row));
        active.delete(task);
      });
    active.add(task);
    return task;
  }
}

/** Every row of a pass so far by record, and the records it read whole. */
interface PassRecords {
  known: Map<string, Map<string, Observed>>;
  readWhole: Set<string>;
}

/**
 * Looks at a batch of the scan beside what the pass knows: its records and their predecessors,
 * and the records it rewrote (orphan intents converted, held rows released), by record key.
 */
async function look(flush: Flush, pass: PassRecords, rows: Observed[]) {
  const { known } = pass;
  const touched = await learn(flush, pass, rows);
  const inScope = [...touched].flatMap((key) => [...known.get(key)!.values()]);
  const blockedPredecessors = new Map<string, Expectation>();
  const predecessor = await lookupPredecessorsOf(
    flush.store,
    flush.owner,
    inScope.map(({ row }) => row),
    blockedPredecessors,
    flush.supersededHops,
  );
  // Converted rows keep their queue place, which this scan may have passed: their records wait.
  // Released rows are queued again behind this scan: the next pass sends them.
  const rewritten = [
    ...(await recoverOrphanIntents(flush, rows, predecessor)),
    ...(await releaseUncredentialed(flush, rows)),
  ].map(targetKey);
  return { touched, predecessor, blockedPredecessors, rewritten };
}

/**
 * Adds a batch of the scan to the rows the pass knows, by record, and returns the records it
 * touched. A record one of whose rows lost its claim is read whole, under both its names (§6.1):
 * the claim may have lost to a row of it no batch of the scan has reached yet.
 */
async function learn(
  flush: Flush,
  pass: PassRecords,
  rows: readonly Observed[],
): Promise<Set<string>> {
  const { known } = pass;
  const touched = new Set<string>();
  for (const observed of rows) {
    const key = targetKey(observed.row);
    touched.add(key);
    if (!known.has(key)) known.set(key, new Map());
    known.get(key)!.set(observed.row.id, observed);
  }
  // Whichever batch the lost row came in: a record the scan met in an earlier batch and meets
  // again may have lost its claim to its own rows not read yet, and would lose it again.
  const readWhole = [...touched].filter((key) => isUnreadSinceLost(flush, pass, key));
  for (const key of readWhole) pass.readWhole.add(key);
  for (const key of readWhole) {
    const { row } = [...known.get(key)!.values()][0]!;
    const raws = await flush.store.byTarget(flush.owner, row.collection, row.targetId);
    for (const raw of raws) {
      const observed = observeStored(decodeRow(raw));
      if (observed !== undefined) known.get(key)!.set(observed.row.id, observed);
    }
  }
  return touched;
}

/**
 * Whether a row of `key`'s record lost its claim and the pass has not read the record whole
 * since (§6.1). The pass chooses no row of such a record: the loss may be to a row of it the scan
 * has not reached yet, and a claim made on what the pass saw would be lost again. That happens
 * when the loss is learnt after the record's latest batch was added — the claim was still
 * committing — and a second loss would spend the one more look the flush gives the row
 * ({@link Flush.noteLost}), so that the next pass, which reads the record whole, passes it by.
 */
function isUnreadSinceLost(flush: Flush, pass: PassRecords, key: string): boolean {
  if (pass.readWhole.has(key)) return false;
  return [...pass.known.get(key)!.keys()].some((id) => flush.lost.has(id));
}

/**
 * Parses a batch; values that fail to parse are quarantined on the spot (G7) — but for one that
 * may still be on the wire, which holds its record until its lease ends (§6.1, G4). Rows of a
 * format version this bundle does not know are kept as they are, for selection to hold their
 * record (§17). Without `quarantine` (the rows that may hold others, read before the scan), a
 * value that failed to parse only holds; the scan quarantines it in its turn.
 */
async function decodeBatch(
  flush: Flush,
  raws: unknown[],
  { quarantine = true } = {},
): Promise<Observed[]> {
  const { deps } = flush;
  const rows: Observed[] = [];
  for (const raw of raws) {
    const decoded = decodeRow(raw);
    const observed = observeStored(decoded);
    if (observed !== undefined) {
      rows.push(observed);
      continue;
    }
    if (decoded.ok) continue;
    const now = deps.clock.now();
    // Its request may still land: its record waits, and it is quarantined once the lease ends.
    const hold = corruptInFlight(raw, now, deps.leaseMs);
    if (hold !== undefined) {
      flush.holdForCorrupt(decoded.id, hold);
      continue;
    }
    if (!quarantine) continue;
    const plan = planQuarantine(decoded, { owner: flush.owner, now });
    if ((await flush.store.replace(plan)) === 'committed') {
      deps.onEvent?.({ type: 'quarantined', id: decoded.id, issues: decoded.issues });
    }
  }
  return rows;
}

/**
 * Finds what holds rows wherever the queue puts them (§6.1), before a pass sends any: values on
 * the wire that failed to parse, and orphan intents, resolved where they can be. Returns the
 * records of the intents it converted: they keep their queue place and wait for the next pass.
 */
async function readHolds(flush: Flush): Promise<string[]> {
  // Quarantining is left to the scan, which meets every value of the queue in its turn.
  const raws = await flush.store.holdingRows(flush.owner);
  const holding = await decodeBatch(flush, raws, { quarantine: false });
  if (holding.length === 0) return [];
  const rows = holding.map(({ row }) => row);
  const predecessor = await lookupPredecessorsOf(
    flush.store,
    flush.owner,
    rows,
    new Map(),
    flush.supersededHops,
  );
  return (await recoverOrphanIntents(flush, holding, predecessor)).map(targetKey);
}

/**
 * Rows held only for want of credentials (`auth_required`, never sent) are nobody's: a holder
 * that has credentials for the owner queues them again (§13) — a worker that started without the
 * page's token may have claimed them first. At most once per row and flush, so a row held again
 * at send time (the credentials went meanwhile) waits. Rows a server answered 401 stay held.
 */
async function releaseUncredentialed(flush: Flush, rows: Observed[]): Promise<OutboxRow[]> {
  const { hasCredentials } = flush.deps;
  if (hasCredentials === undefined) return [];
  const released: OutboxRow[] = [];
  for (const observed of rows) {
    if (flush.released.has(observed.row.id)) continue;
    const plan = planResumeHeld(observed, { owner: flush.owner, only: { code: NO_CREDENTIALS } });
    if (plan === undefined) continue;
    flush.credentialed ??= hasCredentials(flush.owner).catch(() => false);
    if (!(await flush.credentialed)) break;
    flush.released.add(observed.row.id);
    if ((await flush.store.replace(plan)) === 'committed') released.push(observed.row);
  }
  return released;
}

/**
 * A record as the selection saw it when it chose `row` (§6.1, §7): its other rows — the blocked
 * ones it was let past among them — and its predecessor when blocked, each as read, and the keys
 * of all its rows. The claim holds only while all of them still are as seen.
 */
function recordSeen(
  row: OutboxRow,
  record: ReadonlyMap<string, Observed>,
  blockedPredecessors: ReadonlyMap<string, Expectation>,
): RecordSeen {
  const expected = new Map<string, Expectation>();
  for (const { row: other, raw } of record.values())
    if (other.id !== row.id) expected.set(other.id, { id: other.id, row: raw });
  const predecessor = row.successorOf && blockedPredecessors.get(row.successorOf);
  if (predecessor && !expected.has(String(predecessor.id)))
    expected.set(String(predecessor.id), predecessor);
  const passes = overtaken(row, [...record.values()]).filter(
    ({ row: passed }) => passed.overtakenBy === undefined,
  );
  return {
    expected: [...expected.values()],
    ids: [...record.values()].map(({ raw, row: r }) => (raw as { id?: RowKey })?.id ?? r.id),
    ...(passes.length === 0 ? {} : { passes }),
  };
}

/** Rows that still wait — on backoff or on another holder's lease — and when (§12 timer). */
function noteWaiting(flush: Flush, rows: Observed[], now: number): void {
  const { leaseMs } = flush.deps;
  for (const { row } of rows) {
    if (flush.attempted.has(row.id)) continue;
    if (isRowInFlight(row, now, leaseMs)) {
      // Another holder is sending it. Should that holder be dead, this one takes over when the
      // lease ends (§4): wake up then.
      flush.waiting.set(row.id, Math.max(leaseEnd(row, leaseMs), now));
      continue;
    }
    if (row.nextAttemptAt === undefined || row.state !== 'queued') continue;
    flush.waiting.set(row.id, Math.max(row.nextAttemptAt, now));
  }
}

/**
 * The route a row travels by in a batch, or undefined when it goes alone (SPEC §15.1): batches
 * are off, the handler says `batch: false`, the transport knows no endpoint for it, or the limits
 * leave no batch ({@link planBatchRoute}). `'unknown'` while it goes alone to an origin that has
 * not answered yet, whose first answer may advertise an endpoint.
 */
function batchRouteOf(flush: Flush, row: OutboxRow): BatchRoute | 'unknown' | undefined {
  const { deps } = flush;
  const option = deps.handlers[row.collection]?.batch;
  if (deps.batch === false || option === false) return undefined;
  const offered = deps.transport.batchRoute?.(row.request!, {
    owner: flush.owner,
    ...(option?.url === undefined ? {} : { url: option.url }),
  });
  if (offered === undefined || offered === 'unknown') return offered;
  return planBatchRoute(row.request!, offered, deps.batch, option);
}
