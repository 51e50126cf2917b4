import type { CollectionHandler } from '../model/handler.ts';
import type { Json } from '../model/json.ts';
import type { Observed } from '../model/row.ts';
import { decodeRow, isIntentRow, type OutboxRow, pendingCreateId } from '../model/row.ts';
import type { OutboxStore, Receipt, ReplacePlan, Tombstone } from '../model/store.ts';
import { newRequestId } from '../plan/identity.ts';
import { planIntentConversion } from '../plan/intent-conversion.ts';
import { planSuccessorRebase } from '../plan/successor-rebase.ts';
import type { OutboxCoreConfig, OutboxTuning } from './types.ts';

type Deps = OutboxCoreConfig & OutboxTuning;

/** The receipt of a settled request: what the server answered and the ids it named. */
export function receiptFor(
  handler: CollectionHandler | undefined,
  row: OutboxRow,
  status: number,
  body: Json,
  now: number,
): Receipt {
  const facts = handler?.readReceipt?.(body, status) ?? {};
  const serverId =
    facts.serverId ?? (pendingCreateId(row.targetId) === undefined ? row.targetId : undefined);
  return {
    requestId: row.request?.requestId ?? row.id,
    owner: row.owner,
    rowId: row.id,
    collection: row.collection,
    kind: row.kind,
    targetId: row.targetId,
    status,
    body,
    ...(serverId === undefined ? {} : { serverId }),
    ...(facts.revision === undefined ? {} : { revision: facts.revision }),
    settledAt: now,
  };
}

/** What is known of the create behind `pending:<createId>`, following coalesce tombstones. */
export async function resolvePendingCreate(
  store: OutboxStore,
  createId: string,
): Promise<{ id: string; row?: Observed; receipt?: Receipt; tombstone?: Tombstone }> {
  let id = createId;
  for (let hop = 0; hop < 16; hop++) {
    const raw = await store.get(id);
    if (raw !== undefined) {
      const decoded = decodeRow(raw);
      return decoded.ok ? { id, row: { row: decoded.row, raw } } : { id };
    }
    const receipt = await store.getReceipt(id);
    if (receipt !== undefined) return { id, receipt };
    const tombstone = await store.getTombstone(id);
    if (tombstone?.into === undefined || tombstone.reason !== 'coalesced')
      return tombstone ? { id, tombstone } : { id };
    id = tombstone.into;
  }
  return { id };
}

async function intentRowsOf(
  store: OutboxStore,
  owner: string,
  collection: string,
  targetId: string,
): Promise<Observed[]> {
  const rows: Observed[] = [];
  for (const raw of await store.byTarget(owner, collection, targetId)) {
    const decoded = decodeRow(raw);
    if (decoded.ok && isIntentRow(decoded.row) && decoded.row.state !== 'blocked')
      rows.push({ row: decoded.row, raw });
  }
  return rows;
}

/** The intent conversions to commit with a create's success ACK (SPEC §8). */
export async function intentConversion(
  deps: Deps,
  owner: string,
  create: OutboxRow,
  receipt: Receipt,
): Promise<Pick<ReplacePlan, 'expected' | 'put' | 'delete' | 'tombstones'> | undefined> {
  if (create.kind !== 'create' || pendingCreateId(create.targetId) === undefined) return undefined;
  const intents = await intentRowsOf(deps.store, owner, create.collection, create.targetId);
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
export async function successorRebase(
  deps: Deps,
  owner: string,
  sent: OutboxRow,
  receipt: Receipt,
): Promise<Pick<ReplacePlan, 'expected' | 'put'> | undefined> {
  if (pendingCreateId(sent.targetId) !== undefined) return undefined;
  const successors: Observed[] = [];
  for (const raw of await deps.store.byTarget(owner, sent.collection, sent.targetId)) {
    const decoded = decodeRow(raw);
    if (decoded.ok && decoded.row.successorOf === sent.id)
      successors.push({ row: decoded.row, raw });
  }
  if (successors.length === 0) return undefined;
  const plan = planSuccessorRebase(successors, sent, receipt, deps.handlers[sent.collection]);
  return plan.put.length === 0 ? undefined : plan;
}

/**
 * An intent whose create vanished without this holder's receipt (a legacy tab or another holder
 * settled it, §8): find the exact receipt — local first, then the server's lookup — and convert.
 * Not found → mark `predecessor_receipt_unknown` and look again next flush; a failed lookup is
 * not "not found": the intent is left untouched.
 */
export async function resolveIntents(deps: Deps, owner: string, orphan: Observed): Promise<number> {
  const createId = pendingCreateId(orphan.row.targetId);
  if (createId === undefined) return 0;
  const facts = await resolvePendingCreate(deps.store, createId);
  if (facts.row !== undefined) return 0;
  let receipt = facts.receipt;
  let storeReceipt = false;
  if (receipt === undefined) {
    const lookup = await deps.transport.lookupReceipt(facts.id, {
      owner,
      collection: orphan.row.collection,
      url: '',
    });
    if (lookup.kind === 'error') return 0;
    if (lookup.kind === 'not_found') {
      if (orphan.row.evidence?.lastErrorCode === 'predecessor_receipt_unknown') return 0;
      const marked: OutboxRow = {
        ...orphan.row,
        evidence: {
          ...orphan.row.evidence,
          attemptCount: orphan.row.evidence?.attemptCount ?? 0,
          lastErrorCode: 'predecessor_receipt_unknown',
        },
      };
      await deps.store.replace({
        owner,
        expected: [{ id: orphan.row.id, row: orphan.raw }],
        put: [marked],
        reason: 'intent',
      });
      return 0;
    }
    const pseudoCreate: OutboxRow = {
      ...orphan.row,
      id: facts.id,
      kind: 'create',
      request: undefined,
    };
    receipt = receiptFor(
      deps.handlers[orphan.row.collection],
      pseudoCreate,
      lookup.status,
      lookup.body,
      deps.clock.now(),
    );
    receipt = { ...receipt, requestId: facts.id, rowId: facts.id };
    storeReceipt = true;
  }
  const intents = await intentRowsOf(deps.store, owner, orphan.row.collection, orphan.row.targetId);
  if (intents.length === 0) return 0;
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
  const committed = await deps.store.replace({
    owner,
    expected: [...plan.expected, { id: facts.id, row: null }],
    put: plan.put,
    delete: plan.delete,
    tombstones: plan.tombstones,
    ...(storeReceipt ? { receipts: [receipt] } : {}),
    durability: 'strict',
    reason: 'intent',
  });
  if (committed === 'stale') return 0;
  for (const { intentId, into } of plan.converted)
    deps.onEvent?.({ type: 'converted', intentId, into });
  return plan.converted.length;
}
