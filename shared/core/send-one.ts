import type { Outcome } from '../model/outcome.ts';
import type { TransportResult } from '../model/ports.ts';
import type { OutboxRow } from '../model/row.ts';
import { planClaim } from '../plan/claim.ts';
import { sendDeadline } from '../plan/lease.ts';
import { classifyResult } from '../plan/classify.ts';
import type { CoreDeps } from './config.ts';
import type { FlushState } from './flush-state.ts';
import { FlushStop } from './flush-stop.ts';
import { settleOutcome } from './settle-outcome.ts';
import { guardStorage } from './storage-guard.ts';

/** Claim → send → settle for one row (SPEC §4, §5). */
export async function sendOne(
  deps: CoreDeps,
  state: FlushState,
  observed: OutboxRow,
  raw: unknown,
): Promise<void> {
  const claim = planClaim(
    observed,
    raw,
    claimContext(deps, state),
    state.passedOver.get(observed.id),
  );
  if (claim.kind === 'skip') return;
  if ((await guardStorage('flush', () => state.writes.submit(claim.plan))) === 'stale') {
    noteLost(state, [observed]);
    return;
  }
  noteClaimed(deps, state, claim.row, claim.fence);
  await sendClaimed(deps, state, claim.row, claim.fence);
}

/**
 * Counts claims another holder's write beat (`stale`). Such a row changed since the scan —
 * another holder may be sending it, or have held it for want of credentials this one has — so
 * the next pass looks at it again, once per flush: it waits out that holder's lease or goes.
 */
export function noteLost(state: FlushState, rows: readonly OutboxRow[]): void {
  state.report.stale += rows.length;
  for (const row of rows) {
    if (state.lost.has(row.id)) continue;
    state.lost.add(row.id);
    state.attempted.delete(row.id);
  }
}

/** What a claim of this holder writes (SPEC §4). */
export function claimContext(deps: CoreDeps, state: FlushState) {
  return {
    owner: state.owner,
    holderId: deps.holderId,
    now: deps.clock.now(),
    leaseMs: deps.leaseMs,
    bundle: deps.bundle,
  };
}

/** Counts a committed claim and reports it (`claimed`). */
export function noteClaimed(deps: CoreDeps, state: FlushState, row: OutboxRow, fence: number) {
  state.report.claimed++;
  deps.onEvent?.({ type: 'claimed', id: row.id, holderId: deps.holderId, fence });
}

/** The deadline a claimed row's request is sent under (SPEC §4). */
export function deadlineOf(deps: CoreDeps, row: OutboxRow) {
  return sendDeadline(row.claim!, { leaseMs: deps.leaseMs, marginMs: deps.sendMarginMs });
}

/**
 * Why a claimed request does not go after all: the flush stopped while it waited for a slot
 * (say, offline), or its lease could no longer cover it (SPEC §4). It goes back to the queue.
 */
export function unsentReason(
  deps: CoreDeps,
  state: FlushState,
  row: OutboxRow,
  leaveBy: number,
): 'flush_stopped' | 'lease_lapsed' | undefined {
  if (state.stop !== undefined) return 'flush_stopped';
  const now = deps.clock.now();
  if (now - row.sentAt! > deps.leaseMs / 2 || now >= leaveBy) return 'lease_lapsed';
  return undefined;
}

/** Sends a row this holder has claimed with `fence`, alone, and settles its answer. */
export async function sendClaimed(
  deps: CoreDeps,
  state: FlushState,
  row: OutboxRow,
  fence: number,
): Promise<void> {
  const request = row.request!;
  const deadline = deadlineOf(deps, row);
  const result = await state.sends.run(async () => {
    const unsent = unsentReason(deps, state, row, deadline.leaveBy);
    if (unsent !== undefined) return unsent;
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
  noteSent(deps, row, fence, result);
  await settleAnswer(deps, state, row, fence, result);
}

/** The `sent` event, for a request that left. */
export function noteSent(deps: CoreDeps, row: OutboxRow, fence: number, result: TransportResult) {
  if (result.kind === 'not_sent') return;
  deps.onEvent?.({ type: 'sent', id: row.id, requestId: row.request!.requestId, fence });
}

/** The outcome of a result by the row's handler, which may wrap the classifier (§11). */
export function classifyFor(deps: CoreDeps, row: OutboxRow, result: TransportResult): Outcome {
  const handler = deps.handlers[row.collection];
  const fallback = classifyResult(result, deps.clock.now());
  if (!handler?.classify) return fallback;
  if (result.kind !== 'network_error' && result.kind !== 'timeout')
    return handler.classify(result, fallback);
  // No answer came back: the server may still be committing the request (§6). A classifier that
  // throws on it has nothing to read, and blocking the row would release its successors ahead of
  // that commit (§7, G4): the fallback stands and the row keeps its place.
  try {
    return handler.classify(result, fallback);
  } catch (error) {
    deps.logger?.error('handler failed', { id: row.id, error: String(error) });
    return fallback;
  }
}

/**
 * Settles one answer (SPEC §5). An answer the app's handler could not read (classify,
 * readReceipt, readConflict, a conflict policy threw) blocks the row with the reason rather
 * than leave it claimed; once the handler is fixed, `retry` resends the same key and the server
 * replays.
 */
export async function settleAnswer(
  deps: CoreDeps,
  state: FlushState,
  row: OutboxRow,
  fence: number,
  result: TransportResult,
  outcome?: Outcome,
  reread = false,
): Promise<void> {
  try {
    await settleOutcome(
      deps,
      state,
      row,
      fence,
      outcome ?? classifyFor(deps, row, result),
      result,
      reread,
    );
  } catch (error) {
    if (error instanceof FlushStop) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    deps.logger?.error('handler failed', { id: row.id, error: detail });
    const failed: Outcome = { kind: 'permanent', code: 'handler_failed', detail };
    await settleOutcome(deps, state, row, fence, failed, result);
  }
}
