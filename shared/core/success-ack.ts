import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow, isIntentRow, pendingCreateId } from '../model/row.ts';
import type { Receipt, ReplacePlan } from '../model/store.ts';
import { ledgerEntryFor } from '../plan/conflict-ledger.ts';
import { newRequestId } from '../plan/identity.ts';
import { planIntentConversion } from '../plan/intent-conversion.ts';
import { overtaken } from '../plan/overtaken.ts';
import { planSettleSuccess } from '../plan/settle.ts';
import { planSuccessorRebase } from '../plan/successor-rebase.ts';
import type { CoreDeps } from './config.ts';
import type { Flush } from './flush.ts';

/**
 * Plans a success ACK together with what must commit in its transaction (SPEC §5, §6, §8, §10):
 * the intents of a create converted on its receipt, the waiting successors rebased on the
 * revision it produced, and the conflict ledger entry. `alone` plans it without reading the
 * record, on the bet that the sent row is its record's only row; the transaction checks that bet
 * (`records`) and the plan is stale when it lost. Undefined when the claim is not mine.
 */
export async function planSuccessAck(
  flush: Flush,
  current: OutboxRow | undefined,
  raw: unknown,
  receipt: Receipt,
  ctx: { owner: string; holderId: string; fence: number; now: number },
  alone: boolean,
): Promise<ReplacePlan | undefined> {
  if (current === undefined) return undefined;
  const entry = ledgerEntryFor(current, receipt);
  const ledger = entry ? { ledger: [entry] } : {};
  if (alone) {
    const plan = planSettleSuccess(current, raw, receipt, ctx, {
      expected: [],
      alone: true,
      ...ledger,
    });
    return plan.kind === 'not_mine' ? undefined : plan.plan;
  }
  // The record is read once: what the ACK converts and rebases, and the rows it must still hold
  // when it commits — an intent or a successor written between this read and the commit makes
  // the plan stale instead of being left behind, unconverted or unrebased (§5, §6, §8).
  const record = await flush.store.byTarget(ctx.owner, current.collection, current.targetId);
  const rows = decodedRows(record);
  // Handler failures in here are caught by the planners (successor_unprepared); what escapes is
  // the store's.
  const intents = intentConversion(flush.deps, ctx.owner, current, receipt, rows);
  const rebased = successorRebase(flush.deps, current, receipt, rows);
  const passed = overtaken(current, rows);
  const plan = planSettleSuccess(current, raw, receipt, ctx, {
    expected: [
      ...(intents?.expected ?? []),
      ...(rebased?.expected ?? []),
      ...passed.map(({ row, raw }) => ({ id: row.id, row: raw })),
    ],
    put: [
      ...(intents?.put ?? []),
      ...(rebased?.put ?? []),
      ...passed.map(({ row }) => ({ ...row, overtakenBy: receipt.requestId })),
    ],
    delete: intents?.delete ?? [],
    tombstones: intents?.tombstones ?? [],
    recordIds: record.map((value) => (value as { id: string }).id),
    ...ledger,
  });
  return plan.kind === 'not_mine' ? undefined : plan.plan;
}

function decodedRows(raws: unknown[]): Observed[] {
  return raws.flatMap((raw) => {
    const decoded = decodeRow(raw);
    return decoded.ok ? [{ row: decoded.row, raw }] : [];
  });
}

/** The intent conversions to commit with a create's success ACK (SPEC §8). */
function intentConversion(
  deps: CoreDeps,
  owner: string,
  create: OutboxRow,
  receipt: Receipt,
  record: Observed[],
): Pick<ReplacePlan, 'expected' | 'put' | 'delete' | 'tombstones'> | undefined {
  if (create.kind !== 'create' || pendingCreateId(create.targetId) === undefined) return undefined;
  const intents = record.filter(({ row }) => isIntentRow(row) && row.state !== 'blocked');
  if (intents.length === 0) return undefined;
  const plan = planIntentConversion(intents, create, receipt, deps.handlers[create.collection], {
    now: deps.clock.now(),
    owner,
    newId: (prefix) => newRequestId(deps.ids, prefix),
  });
  return {
    expected: plan.expected,
    put: plan.put,
    delete: plan.delete,
    tombstones: plan.tombstones,
  };
}

/** The rebased successors of a settled row, to commit with its success ACK (§6, G4). */
function successorRebase(
  deps: CoreDeps,
  sent: OutboxRow,
  receipt: Receipt,
  record: Observed[],
): Pick<ReplacePlan, 'expected' | 'put'> | undefined {
  if (pendingCreateId(sent.targetId) !== undefined) return undefined;
  const successors = record.filter(({ row }) => row.successorOf === sent.id);
  if (successors.length === 0) return undefined;
  const plan = planSuccessorRebase(successors, sent, receipt, deps.handlers[sent.collection]);
  return plan.put.length === 0 ? undefined : plan;
}
