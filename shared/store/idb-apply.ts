import { mayHaveOtherNames } from '../model/pending.ts';
import {
  type Expectation,
  isUnreadable,
  type RecordName,
  type ReplacePlan,
} from '../model/store.ts';
import {
  assignSeq,
  counterValue,
  holdsExactly,
  matchesObservation,
  seqCounterKey,
} from './commit.ts';
import { encodeKey, type Key } from './keys.ts';
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
 * observation holds. True per committed plan. The compares read what {@link readForPlans} read
 * for all of them at once; a record's names among them, so a name a plan writes counts from the
 * next transaction on (§6.1). Writes are plain requests: one that fails aborts the transaction,
 * whose error the caller reports.
 */
export async function applyPlans(
  tx: IDBTransaction,
  keys: KeyOrder,
  plans: readonly ReplacePlan[],
): Promise<boolean[]> {
  const { rows, records, under, recordOf, present, stored, counters } = await readForPlans(
    tx,
    keys,
    plans,
  );

  // Each plan in order, over the writes of the committed plans before it. Keys are compared by
  // value (§6.1): an array, Date or binary key read back is a new object.
  const written = new Map<string, unknown>();
  const holdsNow = (expectation: Expectation) => {
    const { id, row } = expectation;
    const key = keyOf(id);
    if (!written.has(key)) return matchesObservation(stored(expectation), row);
    const value = written.get(key);
    // As a read would give it back: a structured clone of what was put.
    return matchesObservation(value === GONE ? undefined : structuredClone(value), row);
  };
  const write = (id: unknown, value: unknown, sets?: Map<string, unknown>[]) => {
    const key = keyOf(id);
    written.set(key, value);
    for (const ids of recordOf.get(key) ?? []) ids.delete(key);
    recordOf.delete(key);
    if (sets === undefined) return;
    for (const ids of sets) ids.set(key, id);
    recordOf.set(key, sets);
  };
  const raised = new Set<string>();
  const results = plans.map((plan) => {
    const holds =
      plan.expected.every(holdsNow) &&
      !(['receipts', 'tombstones'] as const).some((store) =>
        plan.absent?.[store]?.some((id) => present[store].has(id)),
      ) &&
      (plan.records ?? []).every(({ collection, targetId, ids }) =>
        holdsExactly([...records.get(recordKey(plan.owner, collection, targetId))!.values()], ids),
      );
    if (!holds) return false;
    // Deletes before puts: a plan that deletes and puts one id leaves the put row.
    for (const id of plan.delete ?? []) {
      rows.delete(id as IDBValidKey);
      write(id, GONE);
    }
    const fresh = assignSeq(plan, counters.get(plan.owner) ?? 0);
    if (plan.seq?.length) {
      counters.set(plan.owner, fresh.counter);
      raised.add(plan.owner);
    }
    for (const value of fresh.put) {
      rows.put(value);
      const { id, owner, collection, targetId } = value as Stored;
      write(id, value, under.get(recordKey(owner, collection, targetId)));
    }
    for (const receipt of plan.receipts ?? []) {
      tx.objectStore(STORE.receipts).put(receipt);
      present.receipts.add(receipt.requestId);
    }
    for (const id of plan.ledgerDelete ?? []) tx.objectStore(STORE.conflicts).delete(id);
    for (const entry of plan.ledger ?? []) tx.objectStore(STORE.conflicts).put(entry);
    for (const tombstone of plan.tombstones ?? []) {
      tx.objectStore(STORE.tombstones).put(tombstone);
      present.tombstones.add(tombstone.id);
    }
    for (const name of plan.names ?? []) tx.objectStore(STORE.names).put(name);
    return true;
  });
  for (const owner of raised) {
    tx.objectStore(STORE.meta).put(counters.get(owner), seqCounterKey(owner));
  }
  return results;
}

/** What the plans of one transaction are compared against, read for all of them at once. */
interface PlanReads {
  rows: IDBObjectStore;
  /** The ids each checked record holds, by {@link keyOf}; the compares lay writes over them. */
  records: Map<string, Map<string, unknown>>;
  /** The checked records that hold the rows stored under a name: its own, or its server id's. */
  under: Map<string, Map<string, unknown>[]>;
  /** The record each read id belongs to, by {@link keyOf}. */
  recordOf: Map<string, Map<string, unknown>[]>;
  /** The `seq` counter of each owner whose plans ask for one (§6.1), as the transaction found it. */
  counters: Map<string, number>;
  /** The receipts and tombstones found present among those the plans expect absent. */
  present: { receipts: Set<string>; tombstones: Set<string> };
  /** The value an expectation's row had when the transaction found it. */
  stored(expectation: Expectation): unknown;
}

/**
 * Every read the compares of `plans` need, issued at once, before any write: the requests of one
 * transaction run in order in the backend, so the reads see the stores as the transaction found
 * them, and the writes of the plans before a plan are laid over them by the caller. The rows
 * observed present are read together, as one range of the queue index (`[owner, savedAt, id]`:
 * a row not found at its observed position has changed), the others by key, and each record
 * checked once — so n plans cost one or two round trips to the backend and about one read each,
 * not two or three awaited one after another.
 */
async function readForPlans(
  tx: IDBTransaction,
  keys: KeyOrder,
  plans: readonly ReplacePlan[],
): Promise<PlanReads> {
  const { cmp } = keys;
  const rows = tx.objectStore(STORE.rows);
  const requests: IDBRequest[] = [];
  const issue = <T>(request: IDBRequest<T>) => {
    requests.push(request);
    return request;
  };
  const checks = recordChecks(tx, issue);
  const gets = new Map<string, IDBRequest>();
  const get = (id: unknown) => {
    const key = keyOf(id);
    if (!gets.has(key)) gets.set(key, issue(rows.get(id as IDBValidKey)));
  };
  const counterReads = new Map<string, IDBRequest>();
  const inQueue = new Map<Expectation, IDBValidKey>();
  const counts: [Set<string>, string, IDBRequest<number>][] = [];
  const present = { receipts: new Set<string>(), tombstones: new Set<string>() };
  for (const plan of plans) {
    if (plan.seq?.length && !counterReads.has(plan.owner)) {
      const counter = tx.objectStore(STORE.meta).get(seqCounterKey(plan.owner));
      counterReads.set(plan.owner, issue(counter));
    }
    for (const { collection, targetId } of plan.records ?? [])
      checks.check(plan.owner, collection, targetId);
    for (const expectation of plan.expected) {
      const row = expectation.row as Stored | null | undefined;
      if (
        typeof row === 'object' &&
        row !== null &&
        !isUnreadable(row) &&
        keyOf(row.id) === keyOf(expectation.id) &&
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
  const found = new Map<string, unknown>();
  let last: unknown[] | undefined;
  for (const value of range?.result ?? []) {
    if (typeof value !== 'object' || value === null) continue;
    const { owner, savedAt, id } = value as Stored;
    found.set(keyOf(id), value);
    last = [owner, savedAt, id];
  }
  const inRange = (key: IDBValidKey | undefined) =>
    key !== undefined &&
    (range!.result.length < limit || (last !== undefined && cmp(key, last) <= 0));
  requests.length = 0;
  for (const [expectation, key] of inQueue) if (!inRange(key)) get(expectation.id);
  checks.followNames();
  await settled(requests);
  const counters = new Map<string, number>();
  for (const [owner, read] of counterReads) counters.set(owner, counterValue(read.result));
  for (const [set, id, count] of counts) if (count.result > 0) set.add(id);

  return {
    rows,
    records: checks.records,
    under: checks.under,
    recordOf: checks.recordOf(),
    present,
    counters,
    stored: (expectation) =>
      inRange(inQueue.get(expectation))
        ? found.get(keyOf(expectation.id))
        : gets.get(keyOf(expectation.id))!.result,
  };
}

/**
 * The reads of the `records` checks (§5, §6): each record's rows under its own name and, since a
 * record is one whatever its name (§6.1), under each `pending:<C>` whose create named it. Round
 * one reads the rows and the names, round two the rows under those names.
 */
function recordChecks(tx: IDBTransaction, issue: <T>(request: IDBRequest<T>) => IDBRequest<T>) {
  // The ids each checked record holds, as the plans before the one being compared left them.
  const records = new Map<string, Map<string, unknown>>();
  const under = new Map<string, Map<string, unknown>[]>();
  const reads: [Map<string, unknown>, IDBRequest<IDBValidKey[]>][] = [];
  const names: [Map<string, unknown>, string, string, IDBRequest<RecordName[]>][] = [];
  const readUnder = (
    ids: Map<string, unknown>,
    owner: string,
    collection: string,
    name: string,
  ) => {
    const key = recordKey(owner, collection, name);
    under.set(key, [...(under.get(key) ?? []), ids]);
    const index = tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerTarget);
    reads.push([ids, issue(index.getAllKeys([owner, collection, name]))]);
  };
  return {
    records,
    under,
    check(owner: string, collection: string, targetId: string): void {
      const key = recordKey(owner, collection, targetId);
      if (records.has(key)) return;
      const ids = new Map<string, unknown>();
      records.set(key, ids);
      readUnder(ids, owner, collection, targetId);
      if (!mayHaveOtherNames(targetId)) return;
      const index = tx.objectStore(STORE.names).index(INDEX.namesByServerId);
      names.push([ids, owner, collection, issue(index.getAll([owner, collection, targetId]))]);
    },
    followNames(): void {
      for (const [ids, owner, collection, read] of names)
        for (const { pendingId } of read.result) readUnder(ids, owner, collection, pendingId);
    },
    /** Once every read is done: the checked records each read row belongs to. */
    recordOf(): Map<string, Map<string, unknown>[]> {
      const recordOf = new Map<string, Map<string, unknown>[]>();
      for (const [ids, read] of reads) {
        for (const id of read.result) {
          ids.set(keyOf(id), id);
          recordOf.set(keyOf(id), [...(recordOf.get(keyOf(id)) ?? []), ids]);
        }
      }
      return recordOf;
    },
  };
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

/** A key as a string that is equal exactly when the keys are (any valid key type, §6.1). */
function keyOf(id: unknown): string {
  return encodeKey(id as Key);
}
