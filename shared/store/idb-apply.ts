import { type Expectation, isUnreadable, type ReplacePlan } from '../model/store.ts';
import { holdsExactly, matchesObservation } from './commit.ts';
import { INDEX, STORE } from './schema.ts';

type Stored = Record<string, unknown>;

/** The key order of the database's factory (`cmp`), and its closed key ranges. */
export interface KeyOrder {
  cmp(a: unknown, b: unknown): number;
  bound(lower: IDBValidKey, upper: IDBValidKey): Parameters<IDBIndex['getAll']>[0];
}

/** A row an earlier plan of the transaction deleted. */
const GONE = Symbol();

/**
 * The body of `replace` and `replaceEach` (SPEC §3): the plans of one readwrite transaction, each
 * compared in order against the stores as the plans before it left them and applied only if its
 * observation holds. True per committed plan.
 *
 * Every read the compares need is issued at once, before any write: the requests of one
 * transaction run in order in the backend, so the reads see the stores as the transaction found
 * them, and the writes of the plans before a plan are laid over them here. The rows observed
 * present are read together, as one range of the queue index (`[owner, savedAt, id]`: a row
 * not found at its observed position has changed), the others by key, and each record checked
 * once — so n plans cost one or two round trips to the backend and about one read each, not two
 * or three awaited one after another. Writes are plain requests: one that fails aborts the
 * transaction, whose error the caller reports.
 */
export async function applyPlans(
  tx: IDBTransaction,
  keys: KeyOrder,
  plans: readonly ReplacePlan[],
): Promise<boolean[]> {
  // Writes are laid over reads by key equality, which holds for string keys only: a batch with a
  // plan naming another key (a corrupt value's, §2) is applied one plan after another.
  if (plans.length > 1 && !plans.every(namesStringKeysOnly)) {
    const results: boolean[] = [];
    for (const plan of plans) results.push(...(await applyPlans(tx, keys, [plan])));
    return results;
  }
  const seen = await readObserved(tx, keys, plans);
  return applyInOrder(tx, plans, seen);
}

/** What the compares of a transaction's plans read, as the transaction found the stores. */
interface Observed {
  /** The stored value an expectation is compared with. */
  current(expectation: Expectation): unknown;
  /** The ids each checked record holds, by record key; the plans applied so far update them. */
  records: Map<string, Set<unknown>>;
  /** The record set each id read in a checked record belongs to. */
  recordOf: Map<unknown, Set<unknown>>;
  /** Receipts and tombstones a plan expects absent that are there. */
  present: { receipts: Set<string>; tombstones: Set<string> };
}

/**
 * Issues every read the plans' compares need at once, before any write (see
 * {@link applyPlans}): the records checked, the rows expected, by one range of the queue index
 * where their observed position is known and by key otherwise, and the receipts and tombstones
 * expected absent.
 */
async function readObserved(
  tx: IDBTransaction,
  keys: KeyOrder,
  plans: readonly ReplacePlan[],
): Promise<Observed> {
  const { cmp } = keys;
  const rows = tx.objectStore(STORE.rows);
  const requests: IDBRequest[] = [];
  const issue = <T>(request: IDBRequest<T>) => {
    requests.push(request);
    return request;
  };
  const records = new Map<string, Set<unknown>>();
  const recordReads: [Set<unknown>, IDBRequest<IDBValidKey[]>][] = [];
  const gets = new Map<unknown, IDBRequest>();
  const get = (id: unknown) => {
    if (!gets.has(id)) gets.set(id, issue(rows.get(id as IDBValidKey)));
  };
  const inQueue = new Map<Expectation, IDBValidKey>();
  const counts: [Set<string>, string, IDBRequest<number>][] = [];
  const present = { receipts: new Set<string>(), tombstones: new Set<string>() };
  for (const plan of plans) {
    for (const { collection, targetId } of plan.records ?? []) {
      const key = recordKey(plan.owner, collection, targetId);
      if (records.has(key)) continue;
      const ids = new Set<unknown>();
      records.set(key, ids);
      const index = rows.index(INDEX.rowsByOwnerTarget);
      recordReads.push([ids, issue(index.getAllKeys([plan.owner, collection, targetId]))]);
    }
    for (const expectation of plan.expected) {
      const row = expectation.row as Stored | null | undefined;
      if (
        typeof row === 'object' &&
        row !== null &&
        !isUnreadable(row) &&
        row.id === expectation.id &&
        typeof row.owner === 'string' &&
        Number.isFinite(row.savedAt)
      )
        inQueue.set(expectation, [row.owner, row.savedAt as number, row.id as string]);
      else get(expectation.id);
    }
    for (const store of [STORE.receipts, STORE.tombstones] as const) {
      for (const id of plan.absent?.[store] ?? [])
        counts.push([present[store], id, issue(tx.objectStore(store).count(id))]);
    }
  }
  let range: IDBRequest<unknown[]> | undefined;
  const limit = 2 * inQueue.size + 8;
  if (inQueue.size > 0) {
    let low: IDBValidKey | undefined;
    let high = low;
    for (const key of inQueue.values()) {
      if (low === undefined || cmp(key, low) < 0) low = key;
      if (high === undefined || cmp(key, high) > 0) high = key;
    }
    const bounds = keys.bound(low!, high!);
    range = issue(rows.index(INDEX.rowsByOwnerSavedAt).getAll(bounds, limit));
  }
  await settled(requests);

  // A range that held more rows than it returned leaves the rows past its last one to a second
  // round of reads by key.
  const found = new Map<unknown, unknown>();
  let last: unknown[] | undefined;
  for (const value of range?.result ?? []) {
    if (typeof value !== 'object' || value === null) continue;
    const { owner, savedAt, id } = value as Stored;
    found.set(id, value);
    last = [owner, savedAt, id];
  }
  const inRange = (key: IDBValidKey | undefined) =>
    key !== undefined &&
    (range!.result.length < limit || (last !== undefined && cmp(key, last) <= 0));
  requests.length = 0;
  for (const [expectation, key] of inQueue) if (!inRange(key)) get(expectation.id);
  await settled(requests);
  const recordOf = new Map<unknown, Set<unknown>>();
  for (const [ids, read] of recordReads) {
    for (const id of read.result) {
      ids.add(id);
      recordOf.set(id, ids);
    }
  }
  for (const [set, id, count] of counts) if (count.result > 0) set.add(id);

  return {
    current: (expectation) =>
      inRange(inQueue.get(expectation))
        ? found.get(expectation.id)
        : gets.get(expectation.id)!.result,
    records,
    recordOf,
    present,
  };
}

/** Compares each plan in order, over the writes of the committed plans before it, and applies it. */
function applyInOrder(
  tx: IDBTransaction,
  plans: readonly ReplacePlan[],
  { current, records, recordOf, present }: Observed,
): boolean[] {
  const rows = tx.objectStore(STORE.rows);
  const written = new Map<unknown, unknown>();
  const holdsNow = (expectation: Expectation) => {
    const { id, row } = expectation;
    if (!written.has(id)) return matchesObservation(current(expectation), row);
    const value = written.get(id);
    // As a read would give it back: a structured clone of what was put.
    return matchesObservation(value === GONE ? undefined : structuredClone(value), row);
  };
  const write = (id: unknown, value: unknown, ids?: Set<unknown>) => {
    written.set(id, value);
    recordOf.get(id)?.delete(id);
    recordOf.delete(id);
    if (ids === undefined) return;
    ids.add(id);
    recordOf.set(id, ids);
  };
  return plans.map((plan) => {
    const holds =
      plan.expected.every(holdsNow) &&
      !(['receipts', 'tombstones'] as const).some((store) =>
        plan.absent?.[store]?.some((id) => present[store].has(id)),
      ) &&
      (plan.records ?? []).every(({ collection, targetId, ids }) =>
        holdsExactly([...records.get(recordKey(plan.owner, collection, targetId))!], ids),
      );
    if (!holds) return false;
    // Deletes before puts: a plan that deletes and puts one id leaves the put row.
    for (const id of plan.delete ?? []) {
      rows.delete(id as IDBValidKey);
      write(id, GONE);
    }
    for (const value of plan.put ?? []) {
      rows.put(value);
      const { id, owner, collection, targetId } = value as Stored;
      write(id, value, records.get(recordKey(owner, collection, targetId)));
    }
    for (const receipt of plan.receipts ?? []) {
      tx.objectStore(STORE.receipts).put(receipt);
      present.receipts.add(receipt.requestId);
    }
    for (const entry of plan.ledger ?? []) tx.objectStore(STORE.conflicts).put(entry);
    for (const tombstone of plan.tombstones ?? []) {
      tx.objectStore(STORE.tombstones).put(tombstone);
      present.tombstones.add(tombstone.id);
    }
    return true;
  });
}

/**
 * Resolves once every request succeeded; rejects with the first failure. The requests of one
 * transaction complete in the order they were made, and a failure aborts the transaction, which
 * fails every request after it: so the last one settles last, whatever happened.
 */
function settled(requests: readonly IDBRequest[]): Promise<void> {
  return new Promise((resolve, reject) => {
    for (const request of requests) request.onerror = () => reject(request.error);
    const last = requests[requests.length - 1];
    if (last) last.onsuccess = () => resolve();
    else resolve();
  });
}

/** The key of a record; empty, matching none, unless every part is a string as `records` has. */
function recordKey(owner: unknown, collection: unknown, targetId: unknown): string {
  return typeof owner === 'string' && typeof collection === 'string' && typeof targetId === 'string'
    ? `${owner.length}:${collection.length}:${owner}${collection}${targetId}`
    : '';
}

function namesStringKeysOnly(plan: ReplacePlan): boolean {
  const isString = (key: unknown) => typeof key === 'string';
  return (
    plan.expected.every(({ id }) => isString(id)) &&
    (plan.delete ?? []).every(isString) &&
    (plan.put ?? []).every((row) => isString((row as Stored | null)?.id)) &&
    (plan.records ?? []).every(({ ids }) => ids.every(isString))
  );
}
