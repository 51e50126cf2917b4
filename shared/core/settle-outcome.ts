import type { Outcome } from '../model/outcome.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { backoffDelay } from '../plan/backoff.ts';
import type { classifyResult } from '../plan/classify.ts';
import { ledgerEntryFor } from '../plan/conflict-successor.ts';
import { planSettleFailure, planSettleSuccess } from '../plan/settle.ts';
import { type FlushState, FlushStop } from './flush-state.ts';
import { settleConflict } from './settle-conflict.ts';
import { intentConversion, receiptFor, successorRebase } from './success-ack.ts';
import type { OutboxCoreConfig, OutboxTuning } from './types.ts';

type Deps = OutboxCoreConfig & OutboxTuning;

/** Runs a store call; a storage fault stops the flush as a device-side transient (§11). */
export async function storage<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw error instanceof FlushStop ? error : new FlushStop('storage');
  }
}

/** Applies an outcome while the claim is still mine (SPEC §5); otherwise changes nothing. */
export async function settle(
  deps: Deps,
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
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = deps.clock.now();
    const alone = attempt === 0;
    if (observed === undefined) {
      const raw = await storage(() => deps.store.get(sent.id));
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
      const settled = alone
        ? planSuccessAlone(current, raw, receipt, { ...holder, now })
        : await planSuccessWithIntents(deps, state.owner, current, raw, receipt, {
            ...holder,
            now,
          });
      plan = settled;
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
    if ((await storage(() => state.writes.submit(plan))) === 'committed') {
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

/** The success ACK of a row its record holds alone: checked in the transaction, no lookups. */
function planSuccessAlone(
  current: OutboxRow | undefined,
  raw: unknown,
  receipt: ReturnType<typeof receiptFor>,
  ctx: { owner: string; holderId: string; fence: number; now: number },
): ReplacePlan | undefined {
  if (current === undefined) return undefined;
  const entry = ledgerEntryFor(current, receipt);
  const plan = planSettleSuccess(current, raw, receipt, ctx, {
    expected: [],
    alone: true,
    ...(entry ? { ledger: [entry] } : {}),
  });
  return plan.kind === 'not_mine' ? undefined : plan.plan;
}

async function planSuccessWithIntents(
  deps: Deps,
  owner: string,
  current: OutboxRow | undefined,
  raw: unknown,
  receipt: ReturnType<typeof receiptFor>,
  ctx: { owner: string; holderId: string; fence: number; now: number },
): Promise<ReplacePlan | undefined> {
  if (current === undefined) return undefined;
  // Handler failures in here are caught by the planners (successor_unprepared); what escapes is
  // the store's.
  const intents = await storage(() => intentConversion(deps, owner, current, receipt));
  const rebased = await storage(() => successorRebase(deps, owner, current, receipt));
  const entry = ledgerEntryFor(current, receipt);
  const plan = planSettleSuccess(current, raw, receipt, ctx, {
    expected: [...(intents?.expected ?? []), ...(rebased?.expected ?? [])],
    put: [...(intents?.put ?? []), ...(rebased?.put ?? [])],
    delete: intents?.delete ?? [],
    tombstones: intents?.tombstones ?? [],
    ...(entry ? { ledger: [entry] } : {}),
  });
  if (plan.kind === 'not_mine') return undefined;
  return plan.plan;
}

function countOutcome(
  deps: Deps,
  state: FlushState,
  sent: OutboxRow,
  outcome: Outcome,
  nextAttemptAt: number | undefined,
): void {
  const report = state.report;
  switch (outcome.kind) {
    case 'success':
      report.succeeded++;
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
