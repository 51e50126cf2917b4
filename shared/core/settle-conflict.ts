import type { ConflictFacts } from '../model/handler.ts';
import type { Outcome } from '../model/outcome.ts';
import type { TransportResult } from '../model/ports.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import { backoffDelay } from '../plan/backoff.ts';
import { planConflictSuccessor } from '../plan/conflict-successor.ts';
import { checkConflictFacts } from '../plan/hook-values.ts';
import { newRequestId } from '../plan/identity.ts';
import { targetKey } from '../plan/select.ts';
import { planSettleFailure } from '../plan/settle.ts';
import type { Flush } from './flush.ts';
import { FlushStop } from './flush-stop.ts';

/**
 * Settles a revision conflict (SPEC §10): a durable successor (or a quarantine under `block`),
 * committed before anything is sent. Past the storm cap, or when the successor cannot be
 * stored, the original is requeued (if still mine) and the flush stops — device-side
 * transients that never mark the network offline.
 */
export async function settleConflict(
  flush: Flush,
  sent: OutboxRow,
  fence: number,
  outcome: Extract<Outcome, { kind: 'conflict' }>,
  result: TransportResult,
): Promise<void> {
  const { deps } = flush;
  const handler = deps.handlers[sent.collection];
  const read = result.kind === 'response' ? handler?.readConflict?.(result) : undefined;
  const facts: ConflictFacts =
    read !== undefined
      ? checkConflictFacts(read)
      : {
          currentRevision: outcome.currentRevision,
          ...(outcome.remote ? { remote: outcome.remote } : {}),
          ...(outcome.history ? { history: outcome.history } : {}),
        };
  const now = deps.clock.now();
  const key = targetKey(sent);
  const count = (flush.conflictsPerTarget.get(key) ?? 0) + 1;
  flush.conflictsPerTarget.set(key, count);
  flush.report.conflicts++;
  // The store as configured, not the flush's guarded view: a fault here is this function's to
  // handle (requeue, then stop), and the warning names the store's own error.
  const { store } = deps;
  const raw = await store.get(sent.id, flush.owner).catch(() => undefined);
  const decoded = decodeRow(raw);
  const current = decoded.ok ? decoded.row : undefined;

  if (count > deps.maxConflictSuccessors) {
    deps.onEvent?.({ type: 'storm', id: sent.id, targetId: sent.targetId });
    await requeue(flush, current, raw, fence, 'conflict_storm');
    throw new FlushStop('conflict_storm');
  }
  // A row of a collection this holder has no handler for (removed from the config): nothing
  // can plan its resend; the dispatcher blocks it with this reason (handler_failed).
  if (handler === undefined) throw new Error(`no handler for collection "${sent.collection}"`);
  const planned = planConflictSuccessor(current, raw, facts, outcome.status, {
    owner: flush.owner,
    holderId: deps.holderId,
    fence,
    now,
    successorId: newRequestId(deps.ids, sent.collection),
    handler,
  });
  if (planned.kind === 'stale') {
    flush.report.stale++;
    deps.onEvent?.({ type: 'settled', id: sent.id, outcome: 'conflict', stale: true });
    return;
  }
  let committed: 'committed' | 'stale';
  try {
    committed = await store.replace(planned.plan);
  } catch (error) {
    deps.logger?.warn('conflict successor not stored', { id: sent.id, error: String(error) });
    await requeue(flush, current, raw, fence, 'successor_persist_failed');
    throw new FlushStop('successor_persist_failed');
  }
  if (committed === 'stale') {
    flush.report.stale++;
    return;
  }
  if (planned.kind === 'block') {
    flush.report.blocked++;
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
  flush: Flush,
  current: OutboxRow | undefined,
  raw: unknown,
  fence: number,
  code: 'conflict_storm' | 'successor_persist_failed',
): Promise<void> {
  const { deps } = flush;
  const now = deps.clock.now();
  const attempts = current?.evidence?.attemptCount ?? 1;
  const nextAttemptAt = now + backoffDelay(attempts, deps.backoff, deps.ids.random());
  const plan = planSettleFailure(
    current,
    raw,
    { kind: 'transient', code, device: true },
    {
      owner: flush.owner,
      holderId: deps.holderId,
      fence,
      now,
      nextAttemptAt,
    },
  );
  if (plan.kind !== 'apply') return;
  if ((await deps.store.replace(plan.plan).catch(() => 'failed')) === 'committed') {
    flush.deferred.set(current!.id, nextAttemptAt);
  }
}
