import { emptyFlushReport, type FlushReport } from '../model/page-api.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow } from '../model/row.ts';
import type { Expectation, RowCursor } from '../model/store.ts';
import { NO_CREDENTIALS } from '../plan/classify.ts';
import { isRowInFlight } from '../plan/in-flight.ts';
import { planResumeHeld } from '../plan/manual-actions.ts';
import { planQuarantine } from '../plan/quarantine.ts';
import {
  type PredecessorLookup,
  type PredecessorState,
  selectBatch,
  targetKey,
} from '../plan/select.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { CoreDeps } from './config.ts';
import type { FlushState } from './flush-state.ts';
import { FlushStop } from './flush-stop.ts';
import { createGroupCommit } from './group-commit.ts';
import { recoverOrphanIntents } from './orphan-intents.ts';
import { lookupPredecessors } from './predecessors.ts';
import { Semaphore } from './semaphore.ts';
import { type BatchGroup, batchRouteOf, DEFAULT_BATCH, gather, sendGroup } from './send-batch.ts';
import { sendOne } from './send-one.ts';
import { guardStorage } from './storage-guard.ts';

/**
 * The flush loop of one holder for one owner (SPEC §4–§8, §11): select → claim → send →
 * settle, passes repeated while they unblock successors. Environment-free: every effect goes
 * through the ports in `deps`.
 */
export async function runFlush(
  deps: CoreDeps,
  owner: string,
  force: boolean,
): Promise<FlushReport> {
  const state: FlushState = {
    owner,
    force,
    report: emptyFlushReport(),
    attempted: new Set(),
    busyTargets: new Set(),
    writes: createGroupCommit(deps.store),
    sends: new Semaphore(deps.concurrency),
    conflictsPerTarget: new Map(),
    deferred: new Map(),
    recovered: new Set(),
    lost: new Set(),
    released: new Set(),
    waiting: new Map(),
    passedOver: new Map(),
  };
  try {
    // A pass that claimed something may have unblocked successors: go again until quiet.
    while ((await runPass(deps, state)) > 0 && state.stop === undefined) {
      state.waiting.clear();
    }
  } catch (error) {
    if (!(error instanceof FlushStop)) throw error;
    state.stop = error.reason;
  }
  if (state.stop !== undefined) state.report.stopped = state.stop;
  // What still waits: rows deferred by this flush and rows the last pass found on backoff.
  const waiting = new Map([...state.waiting, ...state.deferred]);
  state.report.remaining = waiting.size;
  state.report.nextAttemptAt = waiting.size === 0 ? null : Math.min(...waiting.values());
  await deps.store
    .prune(owner, {
      maxReceipts: deps.receipts.maxCount,
      olderThan: deps.clock.now() - deps.receipts.maxAgeMs,
      maxLedger: deps.conflictLedgerMax,
    })
    .catch((error: unknown) => deps.logger?.warn('prune failed', { error: String(error) }));
  return state.report;
}

/**
 * One scan over the owner's rows in queue order; returns how many rows it claimed, converted,
 * released or lost to another holder's claim (those the next pass looks at again).
 */
async function runPass(deps: CoreDeps, state: FlushState): Promise<number> {
  const claimedBefore = state.report.claimed;
  const lostBefore = state.lost.size;
  let converted = 0;
  const active = new Set<Promise<void>>();
  let after: RowCursor | undefined;
  // Records a row of this pass already holds: later batches send none of their rows (§7, G4).
  let closed = new Set<string>();
  // A scan reads at least a full batch's worth of rows (§15.1).
  const limit = Math.max(
    deps.batchSize,
    deps.batch === false ? 0 : (deps.batch.maxRows ?? DEFAULT_BATCH.maxRows),
  );
  /** Runs a send task; its records are free again once it has settled. */
  const start = (keys: string[], send: () => Promise<void>) => {
    const task = send()
      .catch((error: unknown) => {
        state.stop ??= error instanceof FlushStop ? error.reason : 'storage';
        if (!(error instanceof FlushStop))
          deps.logger?.error('send failed', { error: String(error) });
      })
      .finally(() => {
        for (const key of keys) state.busyTargets.delete(key);
        active.delete(task);
      });
    active.add(task);
  };
  const startGroup = (group: BatchGroup) =>
    start(
      group.rows.map(({ row }) => targetKey(row)),
      () => sendGroup(deps, state, group),
    );
  for (;;) {
    const raws = await guardStorage('flush', () => deps.store.scan(state.owner, { after, limit }));
    if (raws.length === 0) break;
    const last = raws[raws.length - 1] as { savedAt: number; id: string };
    after = { savedAt: last.savedAt, id: last.id };
    const rows = await decodeBatch(deps, state, raws);
    const blockedPredecessors = new Map<string, Expectation>();
    const predecessor = await predecessorLookup(deps, state, rows, blockedPredecessors);
    // Converted rows keep their queue place, which this scan may have passed: their records wait.
    for (const row of await recoverOrphanIntents(deps, state.owner, rows, predecessor)) {
      converted++;
      closed.add(targetKey(row));
    }
    // Released rows are queued again behind this scan: the next pass sends them.
    for (const row of await releaseUncredentialed(deps, state, rows)) {
      converted++;
      closed.add(targetKey(row));
    }
    const now = deps.clock.now();
    // A row this flush already attempted still holds the later rows of its record.
    const batch = selectBatch(
      rows.map(({ row }) => row),
      { now, leaseMs: deps.leaseMs, force: state.force, recovered: state.recovered },
      predecessor,
      new Set([...closed, ...state.busyTargets]),
    );
    closed = batch.closed;
    const candidates = batch.sendable.filter((row) => !state.attempted.has(row.id));
    for (const row of candidates)
      state.passedOver.set(row.id, passedOver(row, rows, blockedPredecessors));
    noteWaiting(deps, state, rows, now);
    const rawById = new Map(rows.map(({ row, raw }) => [row.id, raw]));
    const groups = new Map<string, BatchGroup>();
    for (const row of candidates) {
      if (state.stop !== undefined) break;
      // Twice as many sends in hand as may be on the network: the next rows are claimed (and
      // the last ones settled) while requests are in flight, so a slot never waits on IndexedDB.
      while (active.size >= 2 * deps.concurrency) await Promise.race(active);
      if (state.stop !== undefined) break;
      const key = targetKey(row);
      // At most one row of a record in flight, and so in a batch (G4).
      if (state.busyTargets.has(key)) continue;
      state.busyTargets.add(key);
      state.attempted.add(row.id);
      const observed = { row, raw: rawById.get(row.id) };
      const route = batchRouteOf(deps, state.owner, row);
      if (route === undefined) start([key], () => sendOne(deps, state, row, observed.raw));
      else for (const group of gather(groups, route, observed)) startGroup(group);
    }
    // Rows gathered but not sent (the flush stopped) go back with their records unclaimed.
    for (const group of groups.values()) {
      if (state.stop === undefined) startGroup(group);
      else for (const { row } of group.rows) state.busyTargets.delete(targetKey(row));
    }
    if (state.stop !== undefined || raws.length < limit) break;
  }
  await Promise.all(active);
  return state.report.claimed - claimedBefore + converted + state.lost.size - lostBefore;
}

/**
 * Parses a batch; values that fail to parse are quarantined on the spot (G7). Rows of a format
 * version this bundle does not know are kept as they are, for selection to hold their record (§17).
 */
async function decodeBatch(
  deps: CoreDeps,
  state: FlushState,
  raws: unknown[],
): Promise<Observed[]> {
  const rows: Observed[] = [];
  for (const raw of raws) {
    const decoded = decodeRow(raw);
    const observed = observeStored(decoded);
    if (observed !== undefined) {
      rows.push(observed);
      continue;
    }
    if (decoded.ok) continue;
    const plan = planQuarantine(decoded, { owner: state.owner, now: deps.clock.now() });
    if ((await guardStorage('flush', () => deps.store.replace(plan))) === 'committed') {
      deps.onEvent?.({ type: 'quarantined', id: decoded.id, issues: decoded.issues });
    }
  }
  return rows;
}

/**
 * Rows held only for want of credentials (`auth_required`, never sent) are nobody's: a holder
 * that has credentials for the owner queues them again (§13) — a worker that started without the
 * page's token may have claimed them first. At most once per row and flush, so a row held again
 * at send time (the credentials went meanwhile) waits. Rows a server answered 401 stay held.
 */
async function releaseUncredentialed(
  deps: CoreDeps,
  state: FlushState,
  rows: Observed[],
): Promise<OutboxRow[]> {
  const { hasCredentials } = deps;
  if (hasCredentials === undefined) return [];
  const released: OutboxRow[] = [];
  for (const observed of rows) {
    if (state.released.has(observed.row.id)) continue;
    const plan = planResumeHeld(observed, { owner: state.owner, only: { code: NO_CREDENTIALS } });
    if (plan === undefined) continue;
    state.credentialed ??= hasCredentials(state.owner).catch(() => false);
    if (!(await state.credentialed)) break;
    state.released.add(observed.row.id);
    if ((await guardStorage('flush', () => deps.store.replace(plan))) === 'committed')
      released.push(observed.row);
  }
  return released;
}

/** Looks up every `successorOf` row: from this batch, else from the store. */
async function predecessorLookup(
  deps: CoreDeps,
  state: FlushState,
  rows: Observed[],
  blocked: Map<string, Expectation>,
): Promise<PredecessorLookup> {
  const known = new Map<string, PredecessorState>();
  for (const { row } of rows) known.set(row.id, row.state === 'blocked' ? 'blocked' : 'present');
  return guardStorage('flush', () =>
    lookupPredecessors(
      deps.store,
      state.owner,
      rows.map(({ row }) => row.successorOf),
      known,
      blocked,
    ),
  );
}

/**
 * The blocked rows a selected row was let past (§7): the earlier blocked rows of its record in
 * this scan, and its predecessor when blocked. A blocked row does not hold its record; one the
 * app retries meanwhile does again, so the claim expects each as it was seen.
 */
function passedOver(
  row: OutboxRow,
  rows: Observed[],
  blockedPredecessors: Map<string, Expectation>,
): Expectation[] {
  const key = targetKey(row);
  const passed = new Map<string, Expectation>();
  for (const { row: other, raw } of rows) {
    if (other.id === row.id) break;
    if (other.state === 'blocked' && targetKey(other) === key)
      passed.set(other.id, { id: other.id, row: raw });
  }
  const predecessor = row.successorOf && blockedPredecessors.get(row.successorOf);
  if (predecessor) passed.set(String(predecessor.id), predecessor);
  return [...passed.values()];
}

/** Rows that still wait — on backoff or on another holder's lease — and when (§12 timer). */
function noteWaiting(deps: CoreDeps, state: FlushState, rows: Observed[], now: number): void {
  for (const { row } of rows) {
    if (state.attempted.has(row.id)) continue;
    if (isRowInFlight(row, now, deps.leaseMs)) {
      // Another holder is sending it. Should that holder be dead, this one takes over when the
      // lease ends (§4): wake up then.
      const claimEnd = row.claim && row.writer ? row.claim.expiresAt : 0;
      const legacyEnd =
        row.state === 'sending' && row.sentAt !== undefined ? row.sentAt + deps.leaseMs : 0;
      state.waiting.set(row.id, Math.max(claimEnd, legacyEnd, now));
      continue;
    }
    if (row.nextAttemptAt === undefined || row.state !== 'queued') continue;
    state.waiting.set(row.id, Math.max(row.nextAttemptAt, now));
  }
}
