import type { ConflictFacts } from '../model/handler.ts';
import type { Outcome } from '../model/outcome.ts';
import type { TransportResult } from '../model/ports.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import { backoffDelay } from '../plan/backoff.ts';
import { planConflictSuccessor } from '../plan/conflict-successor.ts';
import { newRequestId } from '../plan/identity.ts';
import { targetKey } from '../plan/select.ts';
import { planSettleFailure } from '../plan/settle.ts';
import type { CoreDeps } from './config.ts';
import type { FlushState } from './flush-state.ts';
import { FlushStop } from './flush-stop.ts';

/**
 * Settles a revision conflict (SPEC §10): a durable successor (or a quarantine under `block`),
 * committed before anything is sent. Past the storm cap, or when the successor cannot be
 * stored, the original is requeued (if still mine) and the flush stops — device-side
 * transients that never mark the network offline.
 */
export async function settleConflict(
  deps: CoreDeps,
  state: FlushState,
  sent: OutboxRow,
  fence: number,
  outcome: Extract<Outcome, { kind: 'conflict' }>,
  result: TransportResult,
): Promise<void> {
  const handler = deps.handlers[sent.collection];
  const read = result.kind === 'response' ? handler?.readConflict?.(result) : undefined;
  const facts: ConflictFacts = read ?? {
    currentRevision: outcome.currentRevision,
    ...(outcome.remote ? { remote: outcome.remote } : {}),
    ...(outcome.history ? { history: outcome.history } : {}),
  };
  const now = deps.clock.now();
  const key = targetKey(sent);
  const count = (state.conflictsPerTarget.get(key) ?? 0) + 1;
  state.conflictsPerTarget.set(key, count);
  state.report.conflicts++;
  const raw = await deps.store.get(sent.id, state.owner).catch(() => undefined);
  const decoded = decodeRow(raw);
  const current = decoded.ok ? decoded.row : undefined;

  if (count > deps.maxConflictSuccessors) {
    deps.onEvent?.({ type: 'storm', id: sent.id, targetId: sent.targetId });
    await requeue(deps, state, current, raw, fence, 'conflict_storm');
    throw new FlushStop('conflict_storm');
  }
  // A row of a collection this holder has no handler for (removed from the config): nothing
  // can plan its resend; the dispatcher blocks it with this reason (handler_failed).
  if (handler === undefined) throw new Error(`no handler for collection "${sent.collection}"`);
  const planned = planConflictSuccessor(current, raw, facts, outcome.status, {
    owner: state.owner,
    holderId: deps.holderId,
    fence,
    now,
    successorId: newRequestId(deps.ids, sent.collection),
    handler,
  });
  if (planned.kind === 'stale') {
    state.report.stale++;
    deps.onEvent?.({ type: 'settled', id: sent.id, outcome: 'conflict', stale: true });
    return;
  }
  let committed: 'committed' | 'stale';
  try {
    committed = await deps.store.replace(planned.plan);
  } catch (error) {
    deps.logger?.warn('conflict successor not stored', { id: sent.id, error: String(error) });
    await requeue(deps, state, current, raw, fence, 'successor_persist_failed');
    throw new FlushStop('successor_persist_failed');
  }
  if (committed === 'stale') {
    state.report.stale++;
    return;
  }
  if (planned.kind === 'block') {
    state.report.blocked++;
    deps.onEvent?.({ type: 'blocked', id: sent.id, code: 'revision_conflict' });
  }
  deps.onEvent?.({
    type: 'conflict',
    id: sent.id,
    currentRevision: facts.currentRevision,
    ...(planned.kind === 'successor' ? { successorId: planned.successor.id } : {}),
  });
}

/** Puts the original back in the queue as a device-side transient, if the claim is still mine. */
async function requeue(
  deps: CoreDeps,
  state: FlushState,
  current: OutboxRow | undefined,
  raw: unknown,
  fence: number,
  code: 'conflict_storm' | 'successor_persist_failed',
): Promise<void> {
  const now = deps.clock.now();
  const attempts = current?.evidence?.attemptCount ?? 1;
  const nextAttemptAt = now + backoffDelay(attempts, deps.backoff, deps.ids.random());
  const plan = planSettleFailure(
    current,
    raw,
    { kind: 'transient', code, device: true },
    {
      owner: state.owner,
      holderId: deps.holderId,
      fence,
      now,
      nextAttemptAt,
    },
  );
  if (plan.kind !== 'apply') return;
  if ((await deps.store.replace(plan.plan).catch(() => 'failed')) === 'committed') {
    state.deferred.set(current!.id, nextAttemptAt);
  }
}
