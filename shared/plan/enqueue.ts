import type { Observed } from '../model/row.ts';
import { PENDING_PREFIX, pendingCreateId } from '../model/row.ts';
import { planIntentRow, planMergedRow, planRequestRow } from './enqueue-rows.ts';
import type {
  EnqueueContext,
  EnqueuePlan,
  NewIntent,
  PendingCreateFacts,
} from './enqueue-types.ts';
import { isRowInFlight, wasAttempted } from './in-flight.ts';

function byQueueOrder(a: Observed, b: Observed): number {
  return a.row.savedAt - b.row.savedAt || (a.row.id < b.row.id ? -1 : 1);
}

/**
 * Plans one enqueue (SPEC §6, §8): a plain row; a successor of a row in flight; one merged row
 * replacing rows not in flight; both cancelled; an intent row for a create with no server id
 * yet; or a rejection. Every plan expects the new id absent, so a racing duplicate is `stale`.
 */
export function planEnqueue(
  intent: NewIntent,
  existing: Observed[],
  pending: PendingCreateFacts | undefined,
  ctx: EnqueueContext,
): EnqueuePlan {
  const isCreate = intent.kind === 'create';
  if (isCreate && intent.targetId !== undefined) {
    return {
      kind: 'reject',
      code: 'invalid_intent',
      message: 'A create takes no targetId: its target is pending:<id>.',
    };
  }
  if (!isCreate && intent.targetId === undefined) {
    return {
      kind: 'reject',
      code: 'invalid_intent',
      message: `A ${intent.kind} needs a targetId.`,
    };
  }
  const targetId = intent.targetId ?? `${PENDING_PREFIX}${intent.id}`;
  const createId = isCreate ? undefined : pendingCreateId(targetId);
  const fresh = { ...intent, targetId };
  const chain = [...existing].sort(byQueueOrder);

  if (chain.some(({ row }) => row.kind === 'delete')) {
    return {
      kind: 'reject',
      code: 'target_deleted',
      message: `${targetId} has a delete queued; it cannot be edited.`,
    };
  }

  if (createId !== undefined) {
    const create = pending?.row;
    if (create === undefined) {
      if (pending?.receipt?.serverId !== undefined) {
        return {
          kind: 'retarget',
          targetId: pending.receipt.serverId,
          baseRevision: pending.receipt.revision ?? null,
        };
      }
      if (pending?.tombstone !== undefined && pending.tombstone.reason !== 'converted') {
        return {
          kind: 'reject',
          code: 'target_deleted',
          message: `The create ${createId} was ${pending.tombstone.reason}.`,
        };
      }
      // The create vanished without a receipt we know of: an intent, recovered at flush (§8).
      return planIntentRow(fresh, pending?.id ?? createId, chain, ctx);
    }
    const createUnsent = !wasAttempted(create.row) || create.row.state === 'blocked';
    if (!createUnsent) return planIntentRow(fresh, create.row.id, chain, ctx);
  }

  // Rows not in flight merge into one (for a never-sent create, its intents fold in too).
  const others = chain.filter(({ row }) => !isRowInFlight(row, ctx.now, ctx.leaseMs));
  const inFlight = chain.filter(({ row }) => isRowInFlight(row, ctx.now, ctx.leaseMs));
  if (others.length > 0) return planMergedRow(fresh, others, chain, ctx);
  const predecessor = inFlight.sort((a, b) => (b.row.sentAt ?? 0) - (a.row.sentAt ?? 0))[0];
  return planRequestRow(
    fresh,
    { savedAt: ctx.now, successorOf: predecessor?.row.id },
    chain,
    [],
    ctx,
    predecessor ? 'successor' : 'queued',
  );
}
