import { checkEnqueueInput } from '../model/arguments.ts';
import { type EnqueueInput, EnqueueInputSchema } from '../model/enqueue-input.ts';
import { OutboxError } from '../model/errors.ts';
import type { CollectionHandler } from '../model/handler.ts';
import { outboxError } from '../model/outbox-error.ts';
import type { EnqueueResult } from '../model/page-api.ts';
import type { Observed } from '../model/row.ts';
import { decodeRow, pendingCreateId } from '../model/row.ts';
import { summarizeIssues } from '../model/schema-kit.ts';
import type { ConflictLedgerEntry, RowKey } from '../model/store.ts';
import { evidenceOfAttempt } from '../plan/attempt-outcome.ts';
import { planEnqueue } from '../plan/enqueue.ts';
import type { EnqueuePlan, NewIntent } from '../plan/enqueue-types.ts';
import { newRequestId } from '../plan/identity.ts';
import { revisionIssues } from '../plan/intent-issues.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { WorkerEnqueueOptions } from './outbox-api.ts';
import type { OwnerContext } from './owner-context.ts';
import { resolvePendingCreate } from './pending-create.ts';

/**
 * How often one enqueue is planned again before it gives up with a retryable `storage` error.
 * A plan goes stale only when its record changed between the read and the commit (another
 * holder claimed or settled a row of it, another tab enqueued); a record changing eight times
 * within one enqueue means the caller is better off trying again later. A `retry` re-plans
 * against a changing record for the same reason and within the same bound.
 */
export const MAX_ENQUEUE_PLANS = 8;

/** One owner's enqueue, and what a repeated id already holds. */
export interface OwnerEnqueue {
  /**
   * One enqueue (§6, §8, §9); `ledger` entries, when given, are written in the same transaction
   * as the row (a restore records itself on its conflict's entry, §10.1). With `keepId` a `kept`
   * tombstone under the row's id commits with the row, so the id stays known after its receipt
   * is pruned: an import from another queue, whose delete there cannot share this transaction,
   * may repeat the enqueue at any later time and gets `existing` (§22).
   */
  enqueue(
    input: unknown,
    ledger?: ConflictLedgerEntry[],
    options?: WorkerEnqueueOptions,
  ): Promise<EnqueueResult>;
  /**
   * What an id already names, as an enqueue of it answers (`existing`, or `cancelled` for a
   * cancelled create), from its row, receipt or tombstone; another owner's id is `invalid_id`.
   */
  existing(id: string): Promise<EnqueueResult | undefined>;
}

/** The enqueue of one owner's API, with its re-plan loop (SPEC §6) and its idempotent answer (§9). */
export function createOwnerEnqueue(ctx: OwnerContext): OwnerEnqueue {
  const { deps, store, owner } = ctx;
  const existing = (id: string) => existingOf(ctx, id);

  async function enqueue(
    input: unknown,
    ledger?: ConflictLedgerEntry[],
    { keepId = false, attempted }: WorkerEnqueueOptions = {},
  ): Promise<EnqueueResult> {
    const { intent, handler } = checkedIntent(ctx, input);
    // A repeated id (a retry after a dead port, §9) is found when its plan meets the row, the
    // receipt or the tombstone inside the write transaction — no reads up front.
    const id = intent.id ?? newRequestId(deps.ids, intent.collection);
    let targetId = intent.targetId;
    let baseRevision = intent.baseRevision;
    for (let attempt = 0; attempt < MAX_ENQUEUE_PLANS; attempt++) {
      const fresh: NewIntent = {
        id,
        collection: intent.collection,
        kind: intent.kind,
        ...(targetId === undefined ? {} : { targetId }),
        payload: intent.payload,
        baseRevision,
        meta: intent.meta,
        ...(attempted && { evidence: evidenceOfAttempt(attempted.code, deps.clock.now()) }),
      };
      const planned = await planAgainstRecord(ctx, fresh, handler);
      if (planned.kind === 'reject') {
        // A retry of an enqueue that already landed answers with what landed, not an error.
        const known = await existing(id);
        if (known) return known;
        throw outboxError(planned.code, planned.message, {
          targetId,
          ...(planned.issues === undefined ? {} : { issues: planned.issues }),
        });
      }
      if (planned.kind === 'retarget') {
        targetId = planned.targetId;
        baseRevision = baseRevision ?? planned.baseRevision;
        continue;
      }
      const plan = {
        ...planned.plan,
        absent: { receipts: [id], tombstones: [id] },
        // Beside what the plan writes itself: the entry of a merged row carrying evidence (§10).
        ...(ledger === undefined ? {} : { ledger: [...(planned.plan.ledger ?? []), ...ledger] }),
        ...(keepId
          ? {
              tombstones: [
                ...(planned.plan.tombstones ?? []),
                { id, owner, reason: 'kept' as const, at: deps.clock.now() },
              ],
            }
          : {}),
      };
      if ((await store.replace(plan)) === 'committed') {
        deps.onEvent?.({
          type: 'enqueued',
          id: planned.result.id,
          outcome: planned.result.outcome,
        });
        return planned.result;
      }
      const raced = await existing(id);
      if (raced) return raced;
    }
    throw outboxError('storage', 'The record kept changing while enqueueing; try again.', {
      id,
    });
  }

  return { enqueue, existing };
}

/** The input checked (G7) and its handler found; what is wrong is an `OutboxError`. */
function checkedIntent(
  { deps, owner }: OwnerContext,
  input: unknown,
): { intent: EnqueueInput; handler: CollectionHandler } {
  // Cycles, depth and non-JSON values first: the schema would recurse into them (G7).
  const parsed = EnqueueInputSchema.safeParse(checkEnqueueInput(input));
  if (!parsed.success) {
    const issues = summarizeIssues(parsed.error.issues);
    const code = parsed.error.issues.some((i) => i.path[0] === 'id')
      ? 'invalid_id'
      : 'invalid_intent';
    throw outboxError(
      code,
      `Invalid enqueue input: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      { issues },
    );
  }
  const intent = parsed.data;
  if (intent.owner !== undefined && intent.owner !== owner) {
    throw outboxError('owner_mismatch', undefined, { expected: owner, got: intent.owner });
  }
  const handler = deps.handlers[intent.collection];
  if (handler === undefined)
    throw outboxError('unknown_collection', undefined, { collection: intent.collection });
  // On the input as given: an edit of pending:<id> that is retargeted to its server id takes the
  // revision from the create's receipt (§8), and is not the caller's to supply.
  const issues = revisionIssues(intent, handler);
  if (issues.length > 0)
    throw outboxError(
      'invalid_intent',
      `Invalid enqueue input: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      { issues },
    );
  return { intent, handler };
}

/** One plan of the loop, made from the record and its pending create as they are read now. */
async function planAgainstRecord(
  { deps, store, owner }: OwnerContext,
  fresh: NewIntent,
  handler: CollectionHandler,
): Promise<EnqueuePlan> {
  const { targetId } = fresh;
  const rows: Observed[] = [];
  // Every value stored for the record, readable or not: the plan commits only while the
  // record holds exactly these (§6).
  let recordKeys: RowKey[] | undefined;
  if (targetId !== undefined) {
    recordKeys = [];
    for (const raw of await store.byTarget(owner, fresh.collection, targetId)) {
      recordKeys.push((raw as { id: RowKey }).id);
      // A newer bundle's row is part of the record: the new edit goes after it (§6, §17).
      const observed = observeStored(decodeRow(raw));
      if (observed !== undefined) rows.push(observed);
    }
  }
  // What is known of a pending create is read after its record, never before (§8): a
  // receipt, a deleted create or converted intents that appear in between change the record
  // the plan expects, so a plan made from facts that no longer hold is stale, not committed.
  const createId =
    targetId === undefined || fresh.kind === 'create' ? undefined : pendingCreateId(targetId);
  const pending =
    createId === undefined ? undefined : await resolvePendingCreate(store, owner, createId);
  try {
    return planEnqueue(fresh, rows, pending, {
      owner,
      now: deps.clock.now(),
      leaseMs: deps.leaseMs,
      maxRowBytes: deps.maxRowBytes,
      handler,
      ...(recordKeys === undefined ? {} : { recordKeys }),
    });
  } catch (error) {
    // The planner is pure; what throws in it is the handler (`coalesce`).
    if (error instanceof OutboxError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw outboxError('handler_failed', message, { collection: fresh.collection });
  }
}

/** What `id` already names for this owner: its row, else its receipt, else its tombstone. */
async function existingOf(
  { store, owner }: OwnerContext,
  id: string,
): Promise<EnqueueResult | undefined> {
  const raw = await store.get(id);
  if (raw !== undefined) {
    const decoded = decodeRow(raw);
    if (!decoded.ok || decoded.row.owner !== owner)
      throw outboxError('invalid_id', 'This id is taken.', { id });
    const { row } = decoded;
    return {
      id,
      targetId: row.targetId,
      outcome: 'existing',
      ...(row.request ? { requestId: row.request.requestId } : {}),
    };
  }
  const receipt = await store.getReceipt(id);
  if (receipt !== undefined) {
    if (receipt.owner !== owner) throw outboxError('invalid_id', 'This id is taken.', { id });
    return {
      id,
      requestId: receipt.requestId,
      targetId: receipt.serverId ?? receipt.targetId,
      outcome: 'existing',
    };
  }
  const tombstone = await store.getTombstone(id);
  if (tombstone !== undefined) {
    if (tombstone.owner !== owner) throw outboxError('invalid_id', 'This id is taken.', { id });
    return {
      id,
      targetId: '',
      outcome: tombstone.reason === 'cancelled' ? 'cancelled' : 'existing',
    };
  }
  return undefined;
}
