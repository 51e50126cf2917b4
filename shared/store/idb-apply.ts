import { type Expectation, isUnreadable, type ReplacePlan } from '../model/store.ts';
import { holdsExactly, matchesObservation } from './commit.ts';
import { INDEX, STORE } from './schema.ts';

type Stored = Record<string, unknown>;

/** The rows of one record a plan checks (`records`), read once for every plan that names it. */
interface RecordRead {
  query: [string, string, string];
  /** Read whole, not only their keys: an expected row of the record is compared from them. */
  values?: boolean;
  read?: IDBRequest<unknown[]>;
  /** The ids of its rows, as the plans before the one being compared left them. */
  ids: Set<unknown>;
}

/** A row an earlier plan of the transaction deleted. */
const GONE = Symbol('gone');

/**
 * The body of `replace` and `replaceEach` (SPEC §3): the plans of one readwrite transaction, each
 * compared in order against the rows as the plans before it left them and applied only if its
 * observation holds. True per committed plan.
 *
 * Every read the compares need is issued at once, before any write: the requests of one
 * transaction run in order in the backend, so the reads see the stores as the transaction found
 * them, and the writes of the plans before a plan are laid over them here. The reads are
 * grouped — the rows of a record a plan checks are read with that check (`by_owner_target`), and
 * that read is the compare of the plan's expected row in it; the other rows observed present come
 * from one range of the queue index — so n plans cost one or two round trips to the backend and
 * about one read each, not two or three awaited one after another. Writes are plain requests:
 * one that fails aborts the transaction, whose error the caller reports.
 */
export async function applyPlans(
  tx: IDBTransaction,
  cmp: (a: unknown, b: unknown) => number,
  plans: readonly ReplacePlan[],
): Promise<boolean[]> {
  // Writes are laid over reads by key equality, which holds for string keys only: a batch with a
  // plan naming another key (a corrupt value's, §2) is applied one plan after another.
  if (plans.length > 1 && !plans.every(namesStringKeysOnly)) {
    const results: boolean[] = [];
    for (const plan of plans) results.push(...(await applyPlans(tx, cmp, [plan])));
    return results;
  }
  const rows = tx.objectStore(STORE.rows);
  const byTarget = () => rows.index(INDEX.rowsByOwnerTarget);
  const records = new Map<string, RecordRead>();
  for (const plan of plans) {
    for (const { collection, targetId } of plan.records ?? []) {
      const key = recordKey(plan.owner, collection, targetId)!;
      if (!records.has(key))
        records.set(key, { query: [plan.owner, collection, targetId], ids: new Set() });
    }
  }

  // Each expectation is compared from its record's rows, from the range, or from a get.
  const fromRecord: [Expectation, Stored, RecordRead][] = [];
  const fromRange: [Expectation, Stored, unknown[]][] = [];
  const fromGet: Expectation[] = [];
  for (const plan of plans) {
    for (const expectation of plan.expected) {
      const row = readableRow(expectation);
      const key = row && recordKey(row.owner, row.collection, row.targetId);
      const record = key === undefined ? undefined : records.get(key);
      if (row && record) {
        record.values = true;
        fromRecord.push([expectation, row, record]);
      } else if (row && typeof row.owner === 'string' && Number.isFinite(row.savedAt)) {
        fromRange.push([expectation, row, [row.owner, row.savedAt, row.id]]);
      } else fromGet.push(expectation);
    }
  }

  const requests: IDBRequest[] = [];
  const issue = <T>(request: IDBRequest<T>) => {
    requests.push(request);
    return request;
  };
  const gets = new Map<unknown, IDBRequest>();
  const get = (id: unknown) => {
    if (!gets.has(id)) gets.set(id, issue(rows.get(id as IDBValidKey)));
  };
  for (const record of records.values()) {
    const index = byTarget();
    record.read = issue(
      record.values ? index.getAll(record.query) : index.getAllKeys(record.query),
    );
  }
  let range: IDBRequest<unknown[]> | undefined;
  const limit = 2 * fromRange.length + 8;
  if (fromRange.length > 0) {
    const keys = fromRange.map(([, , key]) => key as IDBValidKey).sort(cmp);
    const bounds = IDBKeyRange.bound(keys[0], keys[keys.length - 1]);
    range = issue(rows.index(INDEX.rowsByOwnerSavedAt).getAll(bounds, limit));
  }
  for (const expectation of fromGet) get(expectation.id);
  const counts: [store: 'receipts' | 'tombstones', id: string, IDBRequest<number>][] = [];
  for (const plan of plans) {
    for (const store of [STORE.receipts, STORE.tombstones] as const) {
      for (const id of plan.absent?.[store] ?? [])
        counts.push([store, id, issue(tx.objectStore(store).count(id))]);
    }
  }
  await settled(requests);

  // Second round, rarely: the range held more rows than it returned, or a record holds a value
  // the browser cannot read (its key is then known only from a read of the keys).
  requests.length = 0;
  const inRange = range?.result ?? [];
  const rangeRows = new Map<unknown, unknown>();
  let last: unknown[] | undefined;
  for (const value of inRange) {
    if (typeof value !== 'object' || value === null) continue;
    const { owner, savedAt, id } = value as Stored;
    rangeRows.set(id, value);
    last = [owner, savedAt, id];
  }
  const covered = (key: unknown[]) =>
    inRange.length < limit || (last !== undefined && cmp(key, last) <= 0);
  for (const [expectation, , key] of fromRange) if (!covered(key)) get(expectation.id);
  const keyReads = new Map<RecordRead, IDBRequest<IDBValidKey[]>>();
  for (const record of records.values()) {
    if (record.values && record.read!.result.includes(null))
      keyReads.set(record, issue(byTarget().getAllKeys(record.query)));
  }
  await settled(requests);
  for (const record of records.values()) {
    const found = record.read!.result;
    const keys =
      keyReads.get(record)?.result ??
      (record.values ? found.map((value) => (value as Stored).id) : found);
    for (const key of keys) record.ids.add(key);
  }

  // What each expectation found when the transaction started.
  const initially = new Map<Expectation, boolean>();
  for (const [expectation, row, record] of fromRecord) {
    const current = record.read!.result.find(
      (value) => (value as Stored | null)?.id === expectation.id,
    );
    initially.set(expectation, matchesObservation(current, row));
  }
  for (const [expectation, row, key] of fromRange) {
    const current = covered(key) ? rangeRows.get(expectation.id) : gets.get(expectation.id)!.result;
    initially.set(expectation, matchesObservation(current, row));
  }
  for (const expectation of fromGet)
    initially.set(
      expectation,
      matchesObservation(gets.get(expectation.id)!.result, expectation.row),
    );
  const present = { receipts: new Set<string>(), tombstones: new Set<string>() };
  for (const [store, id, count] of counts) if (count.result > 0) present[store].add(id);

  // Each plan in order, over the writes of the committed plans before it.
  const written = new Map<unknown, unknown>();
  const recordOf = new Map<unknown, RecordRead>();
  for (const record of records.values()) for (const id of record.ids) recordOf.set(id, record);
  const leave = (id: unknown) => {
    recordOf.get(id)?.ids.delete(id);
    recordOf.delete(id);
  };
  const holdsNow = (expectation: Expectation) => {
    if (!written.has(expectation.id)) return initially.get(expectation) === true;
    const value = written.get(expectation.id);
    // As a read would give it back: a structured clone of what was put.
    return matchesObservation(value === GONE ? undefined : structuredClone(value), expectation.row);
  };
  return plans.map((plan) => {
    const holds =
      plan.expected.every(holdsNow) &&
      !(['receipts', 'tombstones'] as const).some((store) =>
        (plan.absent?.[store] ?? []).some((id) => present[store].has(id)),
      ) &&
      (plan.records ?? []).every(({ collection, targetId, ids }) =>
        holdsExactly([...records.get(recordKey(plan.owner, collection, targetId)!)!.ids], ids),
      );
    if (!holds) return false;
    // Deletes before puts: a plan that deletes and puts one id leaves the put row.
    for (const id of plan.delete ?? []) {
      rows.delete(id as IDBValidKey);
      written.set(id, GONE);
      leave(id);
    }
    for (const value of plan.put ?? []) {
      rows.put(value);
      const row = value as Stored;
      written.set(row.id, value);
      leave(row.id);
      const key = recordKey(row.owner, row.collection, row.targetId);
      const record = key === undefined ? undefined : records.get(key);
      if (record) {
        record.ids.add(row.id);
        recordOf.set(row.id, record);
      }
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
 * Resolves once every request succeeded; rejects with the first failure. Requests of one
 * transaction complete in the order they were made, and a failure aborts the transaction, which
 * fails every request after it: so the last one settles last, whatever happened.
 */
function settled(requests: readonly IDBRequest[]): Promise<void> {
  const last = requests[requests.length - 1];
  if (last === undefined) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const fail = (event: Event) => reject((event.target as IDBRequest).error);
    for (const request of requests) request.onerror = fail;
    last.onsuccess = () => resolve();
  });
}

/** The key of a record; undefined unless every part is a string, as `records` names them. */
function recordKey(owner: unknown, collection: unknown, targetId: unknown): string | undefined {
  return typeof owner === 'string' && typeof collection === 'string' && typeof targetId === 'string'
    ? `${owner.length}:${collection.length}:${owner}${collection}${targetId}`
    : undefined;
}

/** The observed row, when it was observed present and readable under its own id. */
function readableRow({ id, row }: Expectation): Stored | undefined {
  return typeof row === 'object' && row !== null && !isUnreadable(row) && (row as Stored).id === id
    ? (row as Stored)
    : undefined;
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
