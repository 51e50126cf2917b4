import type { OutboxError } from '../model/errors.ts';
import { outboxError } from '../model/outbox-error.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow } from '../model/row.ts';
import type { RowKey } from '../model/store.ts';
import { newRequestId } from '../plan/identity.ts';
import { isRowInFlight } from '../plan/in-flight.ts';
import { inMadeOrder, placingUnsequenced } from '../plan/made-order.ts';
import { type ManualPlan, planDiscard, planResumeHeld, planRetry } from '../plan/manual-actions.ts';
import { planRestore, planRestoreSource, type RestoreRefusal } from '../plan/restore.ts';
import type { OwnerApi } from './outbox-api.ts';
import type { OwnerContext } from './owner-context.ts';
import { MAX_ENQUEUE_PLANS, type OwnerEnqueue } from './owner-enqueue.ts';

/** How many ledger entries `restore` looks through for its conflict (the ledger keeps ~100). */
const MAX_LEDGER_SCAN = 10_000;

/** What the manual actions take from the other parts of the owner API. */
interface ActionParts extends Pick<OwnerEnqueue, 'enqueue' | 'existing'> {
  /** Every row of the owner, as the reads see them. */
  allRows(): Promise<Observed[]>;
}

/**
 * The manual actions of one owner's API (SPEC §13): `retry` and `discard` of one row,
 * `resumeHeld` of held rows, `restore` of a conflict's lost version. Each is planned from a read
 * and committed only while what was read still holds; what cannot be done is an `OutboxError`.
 */
export function createOwnerActions(
  ctx: OwnerContext,
  { enqueue, existing, allRows }: ActionParts,
): Pick<OwnerApi, 'restore' | 'resumeHeld' | 'retry' | 'discard'> {
  const { deps, store, owner } = ctx;
  return {
    async restore(conflictId) {
      const entries = await store.listConflicts(owner, MAX_LEDGER_SCAN);
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
      return enqueue(planned.input, [planned.ledger], { keepId: true });
    },

    async resumeHeld(only) {
      let resumed = 0;
      for (const observed of await allRows()) {
        const plan = planResumeHeld(observed, { owner, ...(only ? { only } : {}) });
        if (plan !== undefined && (await store.replace(plan)) === 'committed') resumed++;
      }
      return resumed;
    },

    async retry(id) {
      // Planned from a read of the record: a change to it meanwhile (an edit claimed) is stale,
      // and the retry is planned again against it.
      for (let attempt = 1; ; attempt++) {
        const observed = await ownRow(ctx, id);
        const { inFlight, record, keys } = await inFlightOf(ctx, observed.row);
        const handler = deps.handlers[observed.row.collection];
        const reissue =
          observed.row.blockedCode === 'retention_exceeded' && handler !== undefined
            ? { handler, requestId: newRequestId(deps.ids, observed.row.collection) }
            : undefined;
        let planned: ManualPlan;
        try {
          planned = planRetry(observed, {
            owner,
            record,
            recordKeys: keys,
            ...(reissue === undefined ? {} : { reissue }),
            ...(inFlight === undefined ? {} : { inFlight }),
          });
        } catch (error) {
          // The planner is pure; what throws in it is the handler making a new request.
          const message = error instanceof Error ? error.message : String(error);
          throw outboxError('handler_failed', message, { id });
        }
        if (planned.kind === 'apply')
          planned = {
            ...planned,
            plan: placingUnsequenced(planned.plan, record, {
              now: deps.clock.now(),
              leaseMs: deps.leaseMs,
            }),
          };
        if (planned.kind === 'refuse' || attempt === MAX_ENQUEUE_PLANS)
          return apply(ctx, id, planned);
        if ((await store.replace(planned.plan)) === 'committed') return;
      }
    },

    async discard(id) {
      const observed = await ownRow(ctx, id);
      const { row } = observed;
      const record =
        row.kind === 'create'
          ? (await store.byTarget(owner, row.collection, row.targetId)).flatMap((raw) => {
              const decoded = decodeRow(raw);
              return decoded.ok ? [{ row: decoded.row, raw }] : [];
            })
          : [];
      await apply(ctx, id, planDiscard(observed, record, { owner, now: deps.clock.now() }));
    },
  };
}

function refusal({ code, message, details }: RestoreRefusal): OutboxError {
  return outboxError(code, message, details);
}

/** The owner's row `id` as stored, or why a manual action cannot touch it. */
async function ownRow({ store, owner }: OwnerContext, id: string): Promise<Observed> {
  const raw = await store.get(id, owner);
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

/**
 * The other rows of `row`'s record, and the one on the wire now: of several, the one made last
 * (by `seq`, §6.1), never the one sent last by some holder's clock.
 */
async function inFlightOf(
  { deps, store, owner }: OwnerContext,
  row: OutboxRow,
): Promise<{ inFlight?: Observed; record: Observed[]; keys: RowKey[] }> {
  const now = deps.clock.now();
  const raws = await store.byTarget(owner, row.collection, row.targetId);
  const record = raws.flatMap((raw) => {
    const decoded = decodeRow(raw);
    return decoded.ok && decoded.row.id !== row.id ? [{ row: decoded.row, raw }] : [];
  });
  // Every key the record holds, a value this bundle cannot read among them (§6.1).
  const keys = raws.map((raw) => (raw as { id: RowKey }).id);
  const sending = inMadeOrder(
    record.filter((other) => isRowInFlight(other.row, now, deps.leaseMs)),
  ).at(-1);
  return sending === undefined ? { record, keys } : { inFlight: sending, record, keys };
}

/** Commits a manual action's plan, or throws why it cannot be done. */
async function apply({ store }: OwnerContext, id: string, planned: ManualPlan): Promise<void> {
  if (planned.kind === 'refuse') throw outboxError(planned.code, planned.message, planned.details);
  if ((await store.replace(planned.plan)) === 'stale')
    throw outboxError('not_blocked', 'The row changed meanwhile; look again.', { id });
}
