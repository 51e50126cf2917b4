import type { Observed, OutboxRow } from '../model/row.ts';
import { decodeRow, pendingCreateId } from '../model/row.ts';
import type { RowKey } from '../model/store.ts';
import { newRequestId } from '../plan/identity.ts';
import { planIntentConversion } from '../plan/intent-conversion.ts';
import { inMadeOrder } from '../plan/made-order.ts';
import { receiptFor } from '../plan/receipt.ts';
import type { PredecessorLookup } from '../plan/select.ts';
import { namesOf } from '../plan/settle.ts';
import { isUnknownVersion } from '../plan/unknown-version.ts';
import type { Flush } from './flush.ts';
import { FlushStop } from './flush-stop.ts';
import { intentRowsOf, resolvePendingCreate } from './pending-create.ts';

/**
 * Intent rows whose create vanished without this holder's receipt (SPEC §8): a legacy tab or
 * another holder settled it. Returns the rows the intents were converted into — they keep their
 * queue place, which a scan may already have passed — and notes on the flush the intents left
 * unresolved: until they are, no later row of their collection goes (§6.1).
 */
export async function recoverOrphanIntents(
  flush: Flush,
  rows: Observed[],
  predecessor: PredecessorLookup,
): Promise<OutboxRow[]> {
  const converted: OutboxRow[] = [];
  // An intent whose predecessor is gone, or is a blocked intent — a blocked intent holds nothing
  // (§7), and one blocked after this intent was linked to it must not leave it waiting for the
  // app (G1). An intent of a create still present, blocked or not, waits for that create.
  const orphans = rows.filter(({ row }) => {
    if (isUnknownVersion(row) || row.request !== undefined || row.state !== 'queued') return false;
    if (row.successorOf === undefined) return false;
    const state = predecessor(row.successorOf, row.id);
    return (
      state === 'absent' ||
      (state === 'blocked' && row.successorOf !== pendingCreateId(row.targetId))
    );
  });
  for (const orphan of orphans) {
    // A store that fails in a recovery stops the flush as a device-side fault (`storage`, G7):
    // the intent stays as it was, and the next flush looks again. (A failed receipt lookup leaves
    // the intent unresolved; the app's `readReceipt` that fails blocks it, below.)
    const recovered = await recoverOrphanIntent(flush, orphan).catch((error: unknown) => {
      throw error instanceof FlushStop ? error : new FlushStop('storage');
    });
    if (recovered === 'unresolved') flush.holdAfter(orphan.row);
    else converted.push(...recovered);
  }
  return converted;
}

/**
 * Notes `code` on an orphan intent; with `blockedDetail`, blocks it with that code and detail (a
 * blocked row holds nothing, §6.1). `unresolved` while it stays an orphan that holds its
 * collection's later rows.
 */
async function markOrphan(
  flush: Flush,
  orphan: Observed,
  code: 'predecessor_receipt_unknown' | 'handler_failed',
  blockedDetail: string | undefined,
): Promise<[] | 'unresolved'> {
  const marked: OutboxRow = {
    ...orphan.row,
    evidence: {
      ...orphan.row.evidence,
      attemptCount: orphan.row.evidence?.attemptCount ?? 0,
      lastErrorCode: code,
    },
    ...(blockedDetail === undefined
      ? {}
      : {
          state: 'blocked',
          blockedAt: flush.deps.clock.now(),
          blockedCode: code,
          blockedDetail,
        }),
  };
  const written = await flush.store.replace({
    owner: flush.owner,
    expected: [{ id: orphan.row.id, row: orphan.raw }],
    put: [marked],
    reason: 'intent',
  });
  return blockedDetail !== undefined && written === 'committed' ? [] : 'unresolved';
}

/**
 * An intent whose create vanished without this holder's receipt (a legacy tab or another holder
 * settled it, §8): find the exact receipt — local first, then the server's lookup — and convert.
 * Not found → mark `predecessor_receipt_unknown` and look again next flush; not found again →
 * blocked with that code, its original kept, for the app (G1: it ends within two flushes). A
 * failed lookup is not "not found": the intent is left untouched. `unresolved` when the intent
 * stays an orphan; it is looked up once per flush.
 */
async function recoverOrphanIntent(
  flush: Flush,
  orphan: Observed,
): Promise<OutboxRow[] | 'unresolved'> {
  const { deps, store, owner } = flush;
  const createId = pendingCreateId(orphan.row.targetId);
  if (createId === undefined) return [];
  const facts = await resolvePendingCreate(store, owner, createId);
  if (facts.row !== undefined) return [];
  if (flush.orphansLooked.has(orphan.row.id)) return 'unresolved';
  flush.orphansLooked.add(orphan.row.id);
  // A record's name without its receipt is left to the server's lookup, which has the body a
  // handler's conversion may read. Rare: the name is written in the transaction that converts
  // the create's intents, and an edit made through `pending:<C>` after it goes to the server id.
  let receipt = facts.receipt;
  let storeReceipt = false;
  if (receipt === undefined) {
    const lookup = await deps.transport.lookupReceipt(facts.id, {
      owner,
      collection: orphan.row.collection,
      url: '',
    });
    if (lookup.kind === 'error') return 'unresolved';
    if (lookup.kind === 'not_found') {
      const again = orphan.row.evidence?.lastErrorCode === 'predecessor_receipt_unknown';
      return markOrphan(flush, orphan, 'predecessor_receipt_unknown', again ? facts.id : undefined);
    }
    try {
      receipt = receiptFor(
        deps.handlers[orphan.row.collection],
        orphanCreate(orphan.row, facts.id),
        lookup.status,
        lookup.body,
        deps.clock.now(),
      );
    } catch (error) {
      // The app's `readReceipt` threw on the create's answer, or named a server id that reads as
      // a pending target: the intent's record stays unknown until the handler is fixed. It is
      // blocked with the reason, as a row whose own answer the handler fails on (G7); `retry`
      // looks it up again. The flush goes on.
      const detail = error instanceof Error ? error.message : String(error);
      deps.logger?.error('handler failed', { id: orphan.row.id, error: detail });
      return markOrphan(flush, orphan, 'handler_failed', detail);
    }
    receipt = { ...receipt, requestId: facts.id, rowId: facts.id };
    storeReceipt = true;
  }
  const intents = await intentRowsOf(store, owner, orphan.row.collection, orphan.row.targetId);
  if (intents.length === 0) return [];
  // The record the intents join, read and checked: they take their place in it by `seq` (§6.1),
  // after the edits of the server id made before them, whatever the clocks say.
  const { serverId } = receipt;
  const raws =
    serverId === undefined ? [] : await store.byTarget(owner, orphan.row.collection, serverId);
  const joined = raws.flatMap((raw) => {
    const decoded = decodeRow(raw);
    return decoded.ok && decoded.row.targetId === serverId ? [decoded.row] : [];
  });
  const plan = planIntentConversion(
    intents,
    undefined,
    receipt,
    deps.handlers[orphan.row.collection],
    {
      now: deps.clock.now(),
      owner,
      newId: (prefix) => newRequestId(deps.ids, prefix),
    },
  );
  // Each converted row that followed the vanished create, not another converted row (an intent
  // blocked unprepared stays as it is).
  const into = new Set(plan.converted.map((c) => c.into));
  const put = plan.put.map((row) =>
    !into.has(row.id) || into.has(row.successorOf!) ? row : afterMadeBefore(row, joined),
  );
  const committed = await store.replace({
    owner,
    expected: [...plan.expected, { id: facts.id, row: null }],
    ...(serverId === undefined
      ? {}
      : {
          records: [
            {
              collection: orphan.row.collection,
              targetId: serverId,
              ids: raws.map((raw) => (raw as { id: RowKey }).id),
            },
          ],
        }),
    put,
    delete: plan.delete,
    tombstones: plan.tombstones,
    ...(storeReceipt
      ? { receipts: [receipt], ...namesOf(orphanCreate(orphan.row, facts.id), receipt) }
      : {}),
    durability: 'strict',
    reason: 'intent',
  });
  if (committed === 'stale') return [];
  for (const { intentId, into } of plan.converted)
    deps.onEvent?.({ type: 'converted', intentId, into });
  return put.filter((row) => into.has(row.id));
}

/**
 * A converted intent linked after the last row of its server id's record made before it (§6.1),
 * or as it is when none was. A row whose place is unknown (no `seq` on one side) counts as made
 * before: the intent waits rather than guesses.
 */
function afterMadeBefore(row: OutboxRow, record: OutboxRow[]): OutboxRow {
  const before = record.filter(
    (other) => other.seq === undefined || row.seq === undefined || other.seq < row.seq,
  );
  const last = inMadeOrder(before.map((other) => ({ row: other }))).at(-1)?.row;
  return last === undefined ? row : { ...row, successorOf: last.id };
}

/** The create an orphan intent waits on, as far as it is known: its id, record and owner. */
function orphanCreate(intent: OutboxRow, createId: string): OutboxRow {
  return { ...intent, id: createId, kind: 'create', request: undefined };
}
