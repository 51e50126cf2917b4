import type { Json } from '../model/json.ts';
import { outboxError } from '../model/outbox-error.ts';
import { mayHaveOtherNames } from '../model/pending.ts';
import type {
  ChangeNotice,
  ConflictLedgerEntry,
  OutboxStore,
  Receipt,
  RecordLook,
  RecordName,
  ReplacePlan,
  ReplaceResult,
  RowCursor,
  Tombstone,
} from '../model/store.ts';
import {
  assignSeq,
  ChangeListeners,
  changeNoticeFor,
  counterValue,
  holdsExactly,
  matchesObservation,
  mergedNotice,
  seqCounterKey,
  visibleTo,
} from './commit.ts';
import {
  encodeKey,
  evaluateKeyPath,
  isValidKey,
  type Key,
  type KeyRangeBounds,
  SortedIndex,
} from './keys.ts';
import {
  DEFAULT_DB_NAME,
  INDEX,
  OUTBOX_SCHEMA,
  STORE,
  type StoreDeclaration,
  type StoreName,
} from './schema.ts';

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /** Connections with the same name share one database, like IndexedDB on one origin. */
  name?: string;
}

/**
 * An in-memory {@link OutboxStore} with the semantics of the IndexedDB one (SPEC §3): the same
 * schema, key order and index membership, structured clones in and out, one change notice per
 * commit to every connection of the same name (this one included). For tests, simulations and
 * environments without IndexedDB; nothing survives the process.
 */
export function createMemoryStore(opts: MemoryStoreOptions = {}): OutboxStore {
  const name = opts.name ?? DEFAULT_DB_NAME;
  let database = databases.get(name);
  if (!database) {
    database = new MemoryDatabase();
    databases.set(name, database);
  }
  return new MemoryConnection(database);
}

/** Drops every named memory database and closes their connections (between tests). */
export function resetMemoryStores(): void {
  for (const database of databases.values()) {
    for (const connection of [...database.connections]) connection.close();
  }
  databases.clear();
}

class MemoryObjectStore {
  readonly #declaration: StoreDeclaration;
  readonly #records = new Map<string, { primaryKey: Key; value: unknown }>();
  readonly #indexes = new Map<string, { keyPath: readonly string[]; entries: SortedIndex }>();

  constructor(declaration: StoreDeclaration) {
    this.#declaration = declaration;
    for (const [index, keyPath] of Object.entries(declaration.indexes)) {
      this.#indexes.set(index, { keyPath, entries: new SortedIndex() });
    }
  }

  /** The primary key a put would use; throws `DataError` where IndexedDB's `put` would. */
  keyOf(value: unknown, key?: Key): Key {
    const found =
      this.#declaration.keyPath === null ? key : evaluateKeyPath(value, this.#declaration.keyPath);
    if (found === undefined || !isValidKey(found)) throw dataError('no valid primary key');
    return found;
  }

  get(key: Key): unknown {
    return this.#records.get(encodeKey(key))?.value;
  }

  /** Stores a value already cloned, under a key from {@link keyOf}. */
  put(primaryKey: Key, value: unknown): void {
    this.delete(primaryKey);
    this.#records.set(encodeKey(primaryKey), { primaryKey, value });
    for (const { keyPath, entries } of this.#indexes.values()) {
      const key = evaluateKeyPath(value, keyPath);
      if (key !== undefined) entries.insert({ key, primaryKey });
    }
  }

  delete(primaryKey: Key): void {
    const encoded = encodeKey(primaryKey);
    const record = this.#records.get(encoded);
    if (!record) return;
    this.#records.delete(encoded);
    for (const { keyPath, entries } of this.#indexes.values()) {
      const key = evaluateKeyPath(record.value, keyPath);
      if (key !== undefined) entries.remove({ key, primaryKey });
    }
  }

  /** Primary keys of an index range, in index order. */
  indexKeys(index: string, bounds: KeyRangeBounds, limit: number, direction?: 'prev'): Key[] {
    const entries = this.#indexes.get(index)?.entries;
    if (!entries) throw new DOMException(`no index ${index}`, 'NotFoundError');
    return entries.range(bounds, limit, direction).map((entry) => entry.primaryKey);
  }

  /** Cloned values of an index range, in index order. */
  indexValues(index: string, bounds: KeyRangeBounds, limit: number, direction?: 'prev'): unknown[] {
    return this.indexKeys(index, bounds, limit, direction).map((key) =>
      structuredClone(this.get(key)),
    );
  }
}

class MemoryDatabase {
  readonly stores = Object.fromEntries(
    Object.entries(OUTBOX_SCHEMA).map(([name, declaration]) => [
      name,
      new MemoryObjectStore(declaration),
    ]),
  ) as Record<StoreName, MemoryObjectStore>;
  readonly connections = new Set<MemoryConnection>();
}

const databases = new Map<string, MemoryDatabase>();

/** Every entry of one owner in an index led by `owner` (`[]` sorts after any other key). */
function ownerBounds(owner: string, below?: number): KeyRangeBounds {
  return below === undefined
    ? { lower: [owner], upper: [owner, []] }
    : { lower: [owner], upper: [owner, below], upperOpen: true };
}

function dataError(message: string): DOMException {
  return new DOMException(message, 'DataError');
}

class MemoryConnection implements OutboxStore {
  readonly #listeners = new ChangeListeners();
  #database: MemoryDatabase | undefined;

  constructor(database: MemoryDatabase) {
    this.#database = database;
    database.connections.add(this);
  }

  #stores(): Record<StoreName, MemoryObjectStore> {
    if (!this.#database) throw outboxError('closed');
    return this.#database.stores;
  }

  async get(id: string, owner?: string): Promise<unknown> {
    return structuredClone(visibleTo(this.#stores().rows.get(id), owner));
  }

  async getMany(ids: readonly string[], owner?: string): Promise<unknown[]> {
    const { rows } = this.#stores();
    return ids.map((id) => structuredClone(visibleTo(rows.get(id), owner)));
  }

  async scan(owner: string, opts: { after?: RowCursor; limit: number }): Promise<unknown[]> {
    const rows = this.#stores().rows;
    if (opts.limit <= 0) return [];
    const { after } = opts;
    const lower: Key = after ? [owner, after.savedAt, after.id] : [owner];
    if (!isValidKey(lower)) throw dataError('invalid scan cursor');
    const bounds = { lower, lowerOpen: after !== undefined, upper: [owner, []] };
    return rows.indexValues(INDEX.rowsByOwnerSavedAt, bounds, opts.limit);
  }

  async holdingRows(owner: string): Promise<unknown[]> {
    const { rows } = this.#stores();
    const sending = [owner, 'sending'];
    return [
      ...rows.indexValues(INDEX.rowsByOwnerState, { lower: sending, upper: sending }, Infinity),
      ...rows.indexValues(INDEX.rowsByOwnerSuccessor, ownerBounds(owner), Infinity),
    ];
  }

  async byTarget(owner: string, collection: string, targetId: string): Promise<unknown[]> {
    return this.#recordKeys(owner, collection, targetId).map((key) =>
      structuredClone(this.#stores().rows.get(key)),
    );
  }

  async byTargets(owner: string, records: readonly RecordLook[]): Promise<unknown[][]> {
    return records.map(({ collection, targetId, except }) => {
      const keys = this.#recordKeys(owner, collection, targetId);
      if (except !== undefined && keys.every((key) => key === except)) return [];
      return keys.map((key) => structuredClone(this.#stores().rows.get(key)));
    });
  }

  /** The primary keys of a record's rows under each of its names (§6.1), in index order. */
  #recordKeys(owner: string, collection: string, targetId: string): Key[] {
    const { rows } = this.#stores();
    return this.#namesOf(owner, collection, targetId).flatMap((name) => {
      const key = [owner, collection, name];
      return rows.indexKeys(
        INDEX.rowsByOwnerTarget,
        { lower: key, upper: key },
        Number.POSITIVE_INFINITY,
      );
    });
  }

  /** Every name of a record (§6.1): `targetId`, then each `pending:<C>` that names it. */
  #namesOf(owner: string, collection: string, targetId: string): string[] {
    const { names } = this.#stores();
    const found = [targetId];
    if (!mayHaveOtherNames(targetId)) return found;
    const key = [owner, collection, targetId];
    for (const pending of names.indexValues(INDEX.namesByServerId, { lower: key, upper: key }, 16))
      found.push((pending as RecordName).pendingId);
    return found;
  }

  async replace(plan: ReplacePlan): Promise<ReplaceResult> {
    const result = this.#apply(plan, []);
    if (result === 'committed') this.#broadcast(changeNoticeFor(plan));
    return result;
  }

  async replaceEach(plans: ReplacePlan[]): Promise<ReplaceResult[]> {
    // No await: the batch is one atomic step, as one IndexedDB transaction is; a plan that throws
    // undoes the plans before it, as an aborted transaction does (SPEC §3).
    const undo: Array<() => void> = [];
    const names: unknown[] = [];
    let results: ReplaceResult[];
    try {
      results = plans.map((plan) => this.#apply(plan, undo, names));
      // A name counts from the next transaction on, as the IndexedDB store reads them up front.
      for (const name of names) this.#stores().names.put(this.#stores().names.keyOf(name), name);
    } catch (error) {
      for (const step of undo.reverse()) step();
      throw error;
    }
    const committed = plans.filter((_, i) => results[i] === 'committed');
    if (committed.length > 0) this.#broadcast(mergedNotice(committed));
    return results;
  }

  #broadcast(notice: ChangeNotice): void {
    for (const connection of [...(this.#database?.connections ?? [])]) connection.#notify(notice);
  }

  /**
   * Compares and applies one plan; `undo` collects how to take its writes back, `names` (in a
   * batch) the record names it writes, applied once the whole batch was.
   */
  #apply(plan: ReplacePlan, undo: Array<() => void>, names?: unknown[]): ReplaceResult {
    const stores = this.#stores();
    // No await from here to the end: the compare and the writes are one atomic step, as one
    // IndexedDB readwrite transaction is (SPEC §3).
    for (const { id, row } of plan.expected) {
      if (!matchesObservation(stores.rows.get(id), row)) return 'stale';
    }
    if (plan.absent?.receipts?.some((id) => stores.receipts.get(id) !== undefined)) return 'stale';
    if (plan.absent?.tombstones?.some((id) => stores.tombstones.get(id) !== undefined))
      return 'stale';
    for (const { collection, targetId, ids } of plan.records ?? []) {
      if (!holdsExactly(this.#recordKeys(plan.owner, collection, targetId), ids)) return 'stale';
    }
    // Every write is checked and cloned before any is applied, so a value IndexedDB would
    // refuse fails the whole plan and writes nothing.
    const deletes = (plan.delete ?? []).map((id) => {
      if (!isValidKey(id)) throw dataError('invalid row id to delete');
      return id;
    });
    const writes: Array<[MemoryObjectStore, Key, unknown]> = [];
    const stage = (store: MemoryObjectStore, values: readonly unknown[] | undefined) => {
      for (const value of values ?? []) {
        const copy = structuredClone(value);
        writes.push([store, store.keyOf(copy), copy]);
      }
    };
    const counterKey = seqCounterKey(plan.owner);
    const fresh = assignSeq(plan, counterValue(stores.meta.get(counterKey)));
    stage(stores.rows, fresh.put);
    stage(stores.receipts, plan.receipts);
    stage(stores.conflicts, plan.ledger);
    stage(stores.tombstones, plan.tombstones);
    if (names === undefined) stage(stores.names, plan.names);
    else names.push(...(plan.names ?? []).map((name) => structuredClone(name)));
    if (plan.seq?.length) writes.push([stores.meta, counterKey, fresh.counter]);
    const keep = (store: MemoryObjectStore, key: Key) => {
      const before = store.get(key);
      undo.push(() => (before === undefined ? store.delete(key) : store.put(key, before)));
    };
    // Deletes before puts: a plan that deletes and puts one id leaves the put row.
    for (const id of deletes) {
      keep(stores.rows, id);
      stores.rows.delete(id);
    }
    for (const id of plan.ledgerDelete ?? []) {
      keep(stores.conflicts, id);
      stores.conflicts.delete(id);
    }
    for (const [store, key, value] of writes) {
      keep(store, key);
      store.put(key, value);
    }
    return 'committed';
  }

  async getReceipt(requestId: string, owner?: string): Promise<Receipt | undefined> {
    const receipt = this.#stores().receipts.get(requestId) as Receipt | undefined;
    return structuredClone(visibleTo(receipt, owner));
  }

  async listReceipts(owner: string, limit: number): Promise<Receipt[]> {
    return this.#newestFirst(STORE.receipts, owner, limit) as Receipt[];
  }

  async listConflicts(owner: string, limit: number): Promise<ConflictLedgerEntry[]> {
    return this.#newestFirst(STORE.conflicts, owner, limit) as ConflictLedgerEntry[];
  }

  async getTombstone(id: string, owner?: string): Promise<Tombstone | undefined> {
    const tombstone = this.#stores().tombstones.get(id) as Tombstone | undefined;
    return structuredClone(visibleTo(tombstone, owner));
  }

  async getName(owner: string, pendingId: string): Promise<RecordName | undefined> {
    return structuredClone(this.#stores().names.get([owner, pendingId])) as RecordName | undefined;
  }

  async prune(
    owner: string,
    limits: { maxReceipts: number; olderThan: number; maxLedger: number; namesOlderThan?: number },
  ): Promise<void> {
    const { receipts, conflicts, names, rows } = this.#stores();
    if (limits.namesOlderThan !== undefined) {
      const old = ownerBounds(owner, limits.namesOlderThan);
      for (const value of names.indexValues(INDEX.byOwnerSettledAt, old, Infinity)) {
        const name = value as RecordName;
        const named = [name.pendingId, name.serverId].some((id) => {
          const key = [owner, name.collection, id];
          return rows.indexKeys(INDEX.rowsByOwnerTarget, { lower: key, upper: key }, 1).length > 0;
        });
        if (!named) names.delete([owner, name.pendingId]);
      }
    }
    const all = Number.POSITIVE_INFINITY;
    const index = INDEX.byOwnerSettledAt;
    for (const key of receipts.indexKeys(index, ownerBounds(owner, limits.olderThan), all)) {
      receipts.delete(key);
    }
    for (const [store, max] of [
      [receipts, limits.maxReceipts],
      [conflicts, limits.maxLedger],
    ] as const) {
      const oldestFirst = store.indexKeys(index, ownerBounds(owner), all);
      for (const key of oldestFirst.slice(0, Math.max(0, oldestFirst.length - max))) {
        store.delete(key);
      }
    }
  }

  async getMeta(key: string): Promise<Json | undefined> {
    return structuredClone(this.#stores().meta.get(key)) as Json | undefined;
  }

  async setMeta(key: string, value: Json | undefined): Promise<void> {
    const { meta } = this.#stores();
    if (value === undefined) meta.delete(meta.keyOf(undefined, key));
    else meta.put(meta.keyOf(value, key), structuredClone(value));
  }

  async updateMeta(
    key: string,
    update: (current: Json | undefined) => Json | undefined,
  ): Promise<Json | undefined> {
    // No await between the read and the write: that is this store's one transaction.
    const { meta } = this.#stores();
    const next = update(structuredClone(meta.get(key)) as Json | undefined);
    if (next === undefined) meta.delete(meta.keyOf(undefined, key));
    else meta.put(meta.keyOf(next, key), structuredClone(next));
    return structuredClone(next);
  }

  onChange(listener: (notice: ChangeNotice) => void): () => void {
    return this.#listeners.add(listener);
  }

  close(): void {
    this.#database?.connections.delete(this);
    this.#database = undefined;
    this.#listeners.clear();
  }

  #newestFirst(store: 'receipts' | 'conflicts', owner: string, limit: number): unknown[] {
    const values = this.#stores()[store];
    if (limit <= 0) return [];
    return values.indexValues(INDEX.byOwnerSettledAt, ownerBounds(owner), limit, 'prev');
  }

  #notify(notice: ChangeNotice): void {
    this.#listeners.emit(structuredClone(notice));
  }
}
