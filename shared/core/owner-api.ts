import { checkEnqueueInput } from '../model/arguments.ts';
import { EnqueueInputSchema } from '../model/enqueue-input.ts';
import { OutboxError } from '../model/errors.ts';
import { outboxError } from '../model/outbox-error.ts';
import type { EnqueueResult, FlushOptions, FlushReport } from '../model/page-api.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow, pendingCreateId } from '../model/row.ts';
import { summarizeIssues } from '../model/schema-kit.ts';
import type { ConflictLedgerEntry, ReplacePlan, RowKey } from '../model/store.ts';
import { planEnqueue } from '../plan/enqueue.ts';
import type { EnqueuePlan } from '../plan/enqueue-types.ts';
import { newRequestId } from '../plan/identity.ts';
import { isRowInFlight } from '../plan/in-flight.ts';
import { type ManualPlan, planDiscard, planResumeHeld, planRetry } from '../plan/manual-actions.ts';
import { planRestore, planRestoreSource, type RestoreRefusal } from '../plan/restore.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { CoreDeps } from './config.ts';
import { newerEditOf } from './newer-edit.ts';
import type { OwnerApi } from './outbox-api.ts';
import { resolvePendingCreate } from './pending-create.ts';
import { createRowReader } from './row-reader.ts';
import { guardStorage } from './storage-guard.ts';

/**
 * How often one enqueue is planned again before it gives up with a retryable `storage` error.
 * A plan goes stale only when its record changed between the read and the commit (another
 * holder claimed or settled a row of it, another tab enqueued); a record changing eight times
 * within one enqueue means the caller is better off trying again later.
 */
const MAX_ENQUEUE_PLANS = 8;

/** How many ledger entries `restore` looks through for its conflict (the ledger keeps ~100). */
const MAX_LEDGER_SCAN = 10_000;

function refusal({ code, message, details }: RestoreRefusal): OutboxError {
  return outboxError(code, message, details);
}

/**
 * The page API bound to one owner (SPEC §13, G6): every read and write is scoped to `owner`.
 * Input is validated here, so the worker endpoint and the page sender validate alike.
 */
export function createOwnerApi(
  deps: CoreDeps,
  owner: string,
  flush: (options?: FlushOptions) => Promise<FlushReport>,
): OwnerApi {
  const { store } = deps;
  const reader = createRowReader(deps, owner);
  const allRows = reader.allRows;

  async function ownRow(id: string): Promise<Observed> {
    const raw = await guardStorage('api', () => store.get(id, owner));
    const decoded = decodeRow(raw);
    if (raw === undefined || !decoded.ok || decoded.row.owner !== owner) {
      if (!decoded.ok && decoded.unknownVersion && decoded.owner === owner) {
        throw outboxError(
          'not_blocked',
          'A newer version of the library wrote this row; that version sends it.',
          { id },
        );
      }
      if (!decoded.ok && raw !== undefined && decoded.owner === owner) {
        throw outboxError(
          'not_blocked',
          'The stored value is corrupt and waits for quarantine by the next flush.',
          { id },
        );
      }
      throw outboxError('not_found', undefined, { id });
    }
    return { row: decoded.row, raw };
  }

  /** The other rows of `row`'s record, and the one on the wire now: the most recently sent. */
  async function inFlightOf(row: OutboxRow): Promise<{ inFlight?: Observed; record: Observed[] }> {
    const now = deps.clock.now();
    const record = (await store.byTarget(owner, row.collection, row.targetId)).flatMap((raw) => {
      const decoded = decodeRow(raw);
      return decoded.ok && decoded.row.id !== row.id ? [{ row: decoded.row, raw }] : [];
    });
    const sending = record
      .filter((other) => isRowInFlight(other.row, now, deps.leaseMs))
      .sort((x, y) => (y.row.sentAt ?? 0) - (x.row.sentAt ?? 0));
    return sending[0] === undefined ? { record } : { inFlight: sending[0], record };
  }

  async function existing(id: string): Promise<EnqueueResult | undefined> {
    const raw = await guardStorage('api', () => store.get(id));
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
    const receipt = await guardStorage('api', () => store.getReceipt(id));
    if (receipt !== undefined) {
      if (receipt.owner !== owner) throw outboxError('invalid_id', 'This id is taken.', { id });
      return {
        id,
        requestId: receipt.requestId,
        targetId: receipt.serverId ?? receipt.targetId,
        outcome: 'existing',
      };
    }
    const tombstone = await guardStorage('api', () => store.getTombstone(id));
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

  async function commit(plan: ReplacePlan): Promise<'committed' | 'stale'> {
    return guardStorage('api', () => store.replace(plan));
  }

  /** Commits a manual action's plan, or throws why it cannot be done. */
  async function apply(id: string, planned: ManualPlan): Promise<void> {
    if (planned.kind === 'refuse')
      throw outboxError(planned.code, planned.message, planned.details);
    if ((await commit(planned.plan)) === 'stale')
      throw outboxError('not_blocked', 'The row changed meanwhile; look again.', { id });
  }

  /**
   * One enqueue (§6, §8, §9); `ledger` entries, when given, are written in the same transaction
   * as the row (a restore records itself on its conflict's entry, §10.1). With `keepId` a `kept`
   * tombstone under the row's id commits with the row, so the id stays known after its receipt
   * is pruned: an import from another queue, whose delete there cannot share this transaction,
   * may repeat the enqueue at any later time and gets `existing` (§22).
   */
  async function enqueue(
    input: unknown,
    ledger?: ConflictLedgerEntry[],
    keepId = false,
  ): Promise<EnqueueResult> {
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
    // A repeated id (a retry after a dead port, §9) is found when its plan meets the row, the
    // receipt or the tombstone inside the write transaction — no reads up front.
    const id = intent.id ?? newRequestId(deps.ids, intent.collection);
    let targetId = intent.targetId;
    let baseRevision = intent.baseRevision;
    for (let attempt = 0; attempt < MAX_ENQUEUE_PLANS; attempt++) {
      const rows: Observed[] = [];
      // Every value stored for the record, readable or not: the plan commits only while the
      // record holds exactly these (§6).
      let recordKeys: RowKey[] | undefined;
      if (targetId !== undefined) {
        recordKeys = [];
        for (const raw of await guardStorage('api', () =>
          store.byTarget(owner, intent.collection, targetId!),
        )) {
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
        targetId === undefined || intent.kind === 'create' ? undefined : pendingCreateId(targetId);
      const pending =
        createId === undefined
          ? undefined
          : await guardStorage('api', () => resolvePendingCreate(store, owner, createId));
      const fresh = {
        id,
        collection: intent.collection,
        kind: intent.kind,
        ...(targetId === undefined ? {} : { targetId }),
        payload: intent.payload,
        baseRevision,
        meta: intent.meta,
      };
      let planned: EnqueuePlan;
      try {
        planned = planEnqueue(fresh, rows, pending, {
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
        throw outboxError('handler_failed', message, { collection: intent.collection });
      }
      if (planned.kind === 'reject') {
        // A retry of an enqueue that already landed answers with what landed, not an error.
        const known = await existing(id);
        if (known) return known;
        throw outboxError(planned.code, planned.message, { targetId });
      }
      if (planned.kind === 'retarget') {
        targetId = planned.targetId;
        baseRevision = baseRevision ?? planned.baseRevision;
        continue;
      }
      const plan = {
        ...planned.plan,
        absent: { receipts: [id], tombstones: [id] },
        ...(ledger === undefined ? {} : { ledger }),
        ...(keepId
          ? {
              tombstones: [
                ...(planned.plan.tombstones ?? []),
                { id, owner, reason: 'kept' as const, at: deps.clock.now() },
              ],
            }
          : {}),
      };
      if ((await commit(plan)) === 'committed') {
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

  return {
    enqueue: (input, options) => enqueue(input, undefined, options?.keepId === true),

    async restore(conflictId) {
      const entries = await guardStorage('api', () => store.listConflicts(owner, MAX_LEDGER_SCAN));
      const entry = entries.find((e) => e.successorId === conflictId);
      const source = planRestoreSource(entry, conflictId, entry && deps.handlers[entry.collection]);
      if (source.kind === 'refuse') throw refusal(source);
      if (source.kind === 'restored') {
        const known = await existing(source.rowId);
        // A kept tombstone knows the id, not the record: the ledger entry does.
        return {
          id: source.rowId,
          outcome: 'existing',
          ...known,
          targetId: known?.targetId || entry!.targetId,
        };
      }
      const { lookupHistory } = deps.transport;
      if (lookupHistory === undefined)
        throw outboxError('history_unavailable', 'This transport cannot read history.', {
          conflictId,
          reason: 'no_history_lookup',
        });
      const lookup = await lookupHistory.call(deps.transport, source.url, {
        owner,
        collection: source.entry.collection,
      });
      const planned = planRestore(source.entry, source.ref, lookup, { now: deps.clock.now() });
      if (planned.kind === 'refuse') throw refusal(planned);
      // The row's id is the conflict's restore for good (§9): kept, so a restore repeated after a
      // legacy tab sent and deleted the row (no receipt, §17) answers with it, never a second row.
      return enqueue(planned.input, [planned.ledger], true);
    },

    rows: reader.rows,
    row: reader.row,
    viewsOf: reader.viewsOf,
    stats: reader.stats,
    flush,

    async resumeHeld(only) {
      let resumed = 0;
      for (const observed of await guardStorage('api', allRows)) {
        const plan = planResumeHeld(observed, { owner, ...(only ? { only } : {}) });
        if (plan !== undefined && (await commit(plan)) === 'committed') resumed++;
      }
      return resumed;
    },

    async retry(id) {
      // Planned from a read of the record: a change to it meanwhile (an edit claimed) is stale,
      // and the retry is planned again against it.
      for (let attempt = 1; ; attempt++) {
        const observed = await ownRow(id);
        const newer = await guardStorage('api', () => newerEditOf(deps, owner, observed.row));
        const { inFlight, record } = await guardStorage('api', () => inFlightOf(observed.row));
        let planned: ManualPlan;
        try {
          planned = planRetry(observed, {
            owner,
            record,
            ...(newer === undefined ? {} : { newer }),
            ...(inFlight === undefined ? {} : { inFlight }),
          });
        } catch (error) {
          // The planner is pure; what throws in it is the handler (its request, a conflict policy).
          const message = error instanceof Error ? error.message : String(error);
          throw outboxError('handler_failed', message, { id });
        }
        if (planned.kind === 'refuse' || attempt === MAX_ENQUEUE_PLANS) return apply(id, planned);
        if ((await commit(planned.plan)) === 'committed') return;
      }
    },

    async discard(id) {
      const observed = await ownRow(id);
      const { row } = observed;
      const record =
        row.kind === 'create'
          ? (
              await guardStorage('api', () => store.byTarget(owner, row.collection, row.targetId))
            ).flatMap((raw) => {
              const decoded = decodeRow(raw);
              return decoded.ok ? [{ row: decoded.row, raw }] : [];
            })
          : [];
      await apply(id, planDiscard(observed, record, { owner, now: deps.clock.now() }));
    },

    async conflicts(options = {}) {
      return guardStorage('api', () => store.listConflicts(owner, options.limit ?? 50));
    },

    async receipts(options = {}) {
      return guardStorage('api', () => store.listReceipts(owner, options.limit ?? 50));
    },

    async receipt(requestId) {
      const receipt = await guardStorage('api', () => store.getReceipt(requestId, owner));
      return receipt?.owner === owner ? receipt : undefined;
    },
  };
}
