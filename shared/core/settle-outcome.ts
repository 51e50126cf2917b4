import type { Outcome } from '../model/outcome.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { backoffDelay } from '../plan/backoff.ts';
import type { classifyResult } from '../plan/classify.ts';
import { receiptFor } from '../plan/receipt.ts';
import { requestOrigin } from '../plan/recovery.ts';
import { planSettleFailure } from '../plan/settle.ts';
import type { FlushState } from './flush-state.ts';
import { settleConflict } from './settle-conflict.ts';
import { guardStorage } from './storage-guard.ts';
import { planSuccessAck } from './success-ack.ts';
import type { CoreDeps } from './types.ts';

/**
 * How often one answer is planned again after its plan went stale. The first plan bets on the
 * row as claimed and alone in its record; each later one re-reads. Stale again means the record
 * keeps changing (new edits, intents); past this the row stays claimed and its lease ends, after
 * which the next flush resends the same key and the server replays the answer (G2): nothing is
 * lost, only delayed.
 */
const MAX_SETTLE_PLANS = 5;

/** Applies an outcome while the claim is still mine (SPEC §5); otherwise changes nothing. */
export async function settleOutcome(
  deps: CoreDeps,
  state: FlushState,
  sent: OutboxRow,
  fence: number,
  outcome: Outcome,
  result: Parameters<typeof classifyResult>[0],
): Promise<void> {
  const holder = { owner: state.owner, holderId: deps.holderId, fence };
  if (outcome.kind === 'conflict') {
    await settleConflict(deps, state, sent, fence, outcome, result);
    return;
  }
  // First try against the row as this holder's claim wrote it, and — for a success — on the bet
  // that it is its record's only row: no reads, and the transaction still checks both (the row
  // unchanged, the record holding just it). When stale, re-read, look up the record's successors
  // and intents, and plan again (a takeover, a new intent, a waiting edit).
  let observed: { raw: unknown; row: OutboxRow | undefined } | undefined = { raw: sent, row: sent };
  for (let attempt = 0; attempt < MAX_SETTLE_PLANS; attempt++) {
    const now = deps.clock.now();
    const alone = attempt === 0;
    if (observed === undefined) {
      const raw = await guardStorage('flush', () => deps.store.get(sent.id, state.owner));
      const decoded = decodeRow(raw);
      observed = { raw, row: decoded.ok ? decoded.row : undefined };
    }
    const { raw, row: current } = observed;
    observed = undefined;
    let plan: ReplacePlan | undefined;
    if (outcome.kind === 'success') {
      const receipt = receiptFor(
        deps.handlers[sent.collection],
        sent,
        outcome.status,
        outcome.body,
        now,
      );
      plan = await planSuccessAck(deps, current, raw, receipt, { ...holder, now }, alone);
      if (plan === undefined) {
        // Not mine: change nothing, but the answer is still news for the UI (§5).
        deps.onEvent?.({
          type: 'settled',
          id: sent.id,
          outcome: 'success',
          stale: true,
          status: outcome.status,
        });
        return;
      }
    } else {
      const attempts = current?.evidence?.attemptCount ?? 1;
      const retryAfter = outcome.kind === 'transient' ? outcome.retryAfterMs : undefined;
      const nextAttemptAt =
        now + backoffDelay(attempts, deps.backoff, deps.ids.random(), retryAfter);
      const failure = planSettleFailure(current, raw, outcome, { ...holder, now, nextAttemptAt });
      if (failure.kind === 'not_mine') {
        state.report.stale++;
        deps.onEvent?.({ type: 'settled', id: sent.id, outcome: outcome.kind, stale: true });
        return;
      }
      plan = failure.plan;
    }
    if ((await guardStorage('flush', () => state.writes.submit(plan))) === 'committed') {
      for (const tomb of plan.tombstones ?? []) {
        if (tomb.reason === 'converted' && tomb.into)
          deps.onEvent?.({ type: 'converted', intentId: tomb.id, into: tomb.into });
      }
      countOutcome(deps, state, sent, outcome, nextOf(plan));
      return;
    }
  }
  state.report.stale++;
}

function nextOf(plan: ReplacePlan): number | undefined {
  const row = plan.put?.[0] as OutboxRow | undefined;
  return row?.nextAttemptAt;
}

function countOutcome(
  deps: CoreDeps,
  state: FlushState,
  sent: OutboxRow,
  outcome: Outcome,
  nextAttemptAt: number | undefined,
): void {
  const report = state.report;
  switch (outcome.kind) {
    case 'success':
      report.succeeded++;
      if (sent.request !== undefined) state.recovered.add(requestOrigin(sent.request.url));
      break;
    case 'transient':
      report.transient++;
      state.deferred.set(sent.id, nextAttemptAt ?? deps.clock.now());
      // The network itself failed: every other row would fail the same way (§12 triggers retry).
      if (!outcome.device && (outcome.code === 'network' || outcome.code === 'timeout'))
        state.stop ??= 'offline';
      break;
    case 'auth':
      report.held++;
      deps.onEvent?.({ type: 'held', id: sent.id });
      break;
    case 'permanent':
      report.blocked++;
      deps.onEvent?.({ type: 'blocked', id: sent.id, code: outcome.code });
      break;
    case 'conflict':
      report.conflicts++;
      break;
  }
  deps.onEvent?.({
    type: 'settled',
    id: sent.id,
    outcome: outcome.kind,
    stale: false,
    ...('status' in outcome ? { status: outcome.status } : {}),
  });
}
