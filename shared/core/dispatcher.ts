import type { CollectionHandler } from '../model/handler.ts';
import type { Outcome } from '../model/outcome.ts';
import { emptyFlushReport, type FlushReport } from '../model/protocol.ts';
import type { Observed } from '../model/row.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { RowCursor } from '../model/store.ts';
import { planClaim, sendDeadline } from '../plan/claim.ts';
import { classifyResult } from '../plan/classify.ts';
import { isRowInFlight } from '../plan/in-flight.ts';
import { planQuarantine } from '../plan/quarantine.ts';
import {
  type PredecessorLookup,
  type PredecessorState,
  selectBatch,
  targetKey,
} from '../plan/select.ts';
import { observeStored } from '../plan/unknown-version.ts';
import { type FlushState, FlushStop, Semaphore } from './flush-state.ts';
import { createGroupCommit } from './group-commit.ts';
import { recoverOrphanIntents } from './orphan-intents.ts';
import { lookupPredecessors } from './predecessors.ts';
import { settleOutcome } from './settle-outcome.ts';
import { guardStorage } from './storage-guard.ts';
import type { CoreDeps } from './types.ts';

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
    waiting: new Map(),
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

/** One scan over the owner's rows in queue order; returns how many rows it claimed or converted. */
async function runPass(deps: CoreDeps, state: FlushState): Promise<number> {
  const claimedBefore = state.report.claimed;
  let converted = 0;
  const active = new Set<Promise<void>>();
  let after: RowCursor | undefined;
  // Records a row of this pass already holds: later batches send none of their rows (§7, G4).
  let closed = new Set<string>();
  for (;;) {
    const raws = await guardStorage('flush', () =>
      deps.store.scan(state.owner, { after, limit: deps.batchSize }),
    );
    if (raws.length === 0) break;
    const last = raws[raws.length - 1] as { savedAt: number; id: string };
    after = { savedAt: last.savedAt, id: last.id };
    const rows = await decodeBatch(deps, state, raws);
    const predecessor = await predecessorLookup(deps, state, rows);
    // Converted rows keep their queue place, which this scan may have passed: their records wait.
    for (const row of await recoverOrphanIntents(deps, state.owner, rows, predecessor)) {
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
    noteWaiting(deps, state, rows, now);
    const rawById = new Map(rows.map(({ row, raw }) => [row.id, raw]));
    for (const row of candidates) {
      if (state.stop !== undefined) break;
      // Twice as many rows in hand as may be on the network: the next rows are claimed (and the
      // last ones settled) while requests are in flight, so a slot never waits on IndexedDB.
      while (active.size >= 2 * deps.concurrency) await Promise.race(active);
      if (state.stop !== undefined) break;
      const key = targetKey(row);
      if (state.busyTargets.has(key)) continue;
      state.busyTargets.add(key);
      state.attempted.add(row.id);
      const task = sendOne(deps, state, row, rawById.get(row.id))
        .catch((error: unknown) => {
          state.stop ??= error instanceof FlushStop ? error.reason : 'storage';
          if (!(error instanceof FlushStop))
            deps.logger?.error('send failed', { id: row.id, error: String(error) });
        })
        .finally(() => {
          state.busyTargets.delete(key);
          active.delete(task);
        });
      active.add(task);
    }
    if (state.stop !== undefined || raws.length < deps.batchSize) break;
  }
  await Promise.all(active);
  return state.report.claimed - claimedBefore + converted;
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

/** Looks up every `successorOf` row: from this batch, else from the store. */
async function predecessorLookup(
  deps: CoreDeps,
  state: FlushState,
  rows: Observed[],
): Promise<PredecessorLookup> {
  const known = new Map<string, PredecessorState>();
  for (const { row } of rows) known.set(row.id, row.state === 'blocked' ? 'blocked' : 'present');
  return guardStorage('flush', () =>
    lookupPredecessors(
      deps.store,
      state.owner,
      rows.map(({ row }) => row.successorOf),
      known,
    ),
  );
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

function classify(
  handler: CollectionHandler | undefined,
  result: Parameters<typeof classifyResult>[0],
  now: number,
): Outcome {
  const fallback = classifyResult(result, now);
  return handler?.classify ? handler.classify(result, fallback) : fallback;
}

/** Claim → send → settle for one row (SPEC §4, §5). */
async function sendOne(
  deps: CoreDeps,
  state: FlushState,
  observed: OutboxRow,
  raw: unknown,
): Promise<void> {
  const claim = planClaim(observed, raw, {
    owner: state.owner,
    holderId: deps.holderId,
    now: deps.clock.now(),
    leaseMs: deps.leaseMs,
    bundle: deps.bundle,
  });
  if (claim.kind === 'skip') return;
  if ((await guardStorage('flush', () => state.writes.submit(claim.plan))) === 'stale') {
    state.report.stale++;
    return;
  }
  state.report.claimed++;
  const { row, fence } = claim;
  const request = row.request!;
  deps.onEvent?.({ type: 'claimed', id: row.id, holderId: deps.holderId, fence });
  const handler = deps.handlers[row.collection];
  const deadline = sendDeadline(row.claim!, { leaseMs: deps.leaseMs, marginMs: deps.sendMarginMs });
  const result = await state.sends.run(async () => {
    // A claim that waited for a slot is not spent after the flush stopped (say, offline), nor
    // on a request that could outlive its lease: it goes back to the queue unsent.
    if (state.stop !== undefined) return 'flush_stopped' as const;
    const now = deps.clock.now();
    if (now - row.sentAt! > deps.leaseMs / 2 || now >= deadline.leaveBy)
      return 'lease_lapsed' as const;
    // The transport bounds what it awaits by the claim too (§4): past `leaveBy` nothing leaves.
    const answer = await deps.transport.send(request, {
      owner: state.owner,
      collection: row.collection,
      deadline,
    });
    // The network itself failed: stop before the slot passes to a row claimed ahead (§12 retries).
    if (answer.kind === 'network_error' || answer.kind === 'timeout') state.stop ??= 'offline';
    return answer;
  });
  if (typeof result === 'string') {
    const unsent: Outcome = { kind: 'transient', code: result, device: true };
    await settleOutcome(deps, state, row, fence, unsent, { kind: 'timeout' });
    return;
  }
  deps.onEvent?.({ type: 'sent', id: row.id, requestId: request.requestId, fence });
  try {
    const outcome = classify(handler, result, deps.clock.now());
    await settleOutcome(deps, state, row, fence, outcome, result);
  } catch (error) {
    if (error instanceof FlushStop) throw error;
    // The answer could not be read: the app's handler threw (classify, readReceipt,
    // readConflict, a conflict policy). Block the row with the reason rather than leave it
    // claimed; once the handler is fixed, `retry` resends the same key and the server replays.
    const detail = error instanceof Error ? error.message : String(error);
    deps.logger?.error('handler failed', { id: row.id, error: detail });
    const failed: Outcome = { kind: 'permanent', code: 'handler_failed', detail };
    await settleOutcome(deps, state, row, fence, failed, result);
  }
}
