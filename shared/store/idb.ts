import type { Json } from '../model/json.ts';
import { outboxError } from '../model/outbox-error.ts';
import { mayHaveOtherNames } from '../model/pending.ts';
import {
  type ConflictLedgerEntry,
  type OutboxStore,
  type Receipt,
  type RecordLook,
  type RecordName,
  type ReplacePlan,
  type Tombstone,
  unreadableValue,
} from '../model/store.ts';
import {
  ChangeListeners,
  changeNoticeFor,
  isChangeNotice,
  mergedNotice,
  visibleTo,
} from './commit.ts';
import { applyPlans, type KeyOrder } from './idb-apply.ts';
import { done, request, walk } from './idb-request.ts';
import {
  changeChannelName,
  createMissingStores,
  DEFAULT_DB_NAME,
  INDEX,
  lacksOutboxSchema,
  STORE,
  type StoreName,
} from './schema.ts';

/** Options of {@link openIdbStore}. */
export interface IdbStoreOptions {
  /** The database name (SPEC §2); default `sw-outbox`. */
  name?: string;
  /** The IndexedDB factory; default the global `indexedDB`. */
  indexedDB?: IDBFactory;
  /** Exchange change notices on BroadcastChannel `sw-outbox:<name>`; default true where it exists. */
  broadcast?: boolean;
  /**
   * Called when a schema upgrade this connection needs waits on an older connection that does not
   * close (SPEC §17). The open keeps waiting; without this callback it waits silently.
   */
  onUpgradeBlocked?: () => void;
}

type OutboxDb = IDBDatabase;

const PRUNE_BATCH = 100;
const noop = () => {};

/**
 * Opens the IndexedDB {@link OutboxStore} (SPEC §2, §3) — the only code that opens IndexedDB.
 * Missing stores and indexes are created on open. On `versionchange` the connection closes at
 * once so the upgrade can proceed, and the next call reopens it (SPEC §17). After `close()` every
 * call rejects with `OutboxError('closed')`.
 */
export async function openIdbStore(opts: IdbStoreOptions = {}): Promise<OutboxStore> {
  const name = opts.name ?? DEFAULT_DB_NAME;
  const factory = opts.indexedDB ?? globalThis.indexedDB;
  const listeners = new ChangeListeners();
  const keys: KeyOrder = {
    cmp: (a, b) => factory.cmp(a, b),
    bound: (lower, upper) => IDBKeyRange.bound(lower, upper),
  };
  const channel =
    opts.broadcast !== false && typeof BroadcastChannel === 'function'
      ? new BroadcastChannel(changeChannelName(name))
      : undefined;
  let closed = false;
  let current: Promise<OutboxDb> | undefined;

  const database = (): Promise<OutboxDb> => {
    if (closed) return Promise.reject(outboxError('closed'));
    if (current) return current;
    const opening = openOutboxDb(factory, name, opts.onUpgradeBlocked, () => {
      if (current === opening) current = undefined;
    });
    opening.catch(() => {
      if (current === opening) current = undefined;
    });
    current = opening;
    return opening;
  };

  try {
    await database();
  } catch (error) {
    channel?.close();
    throw error;
  }
  if (channel) {
    channel.onmessage = (event: MessageEvent) => {
      if (isChangeNotice(event.data)) listeners.emit(event.data);
    };
  }

  const updateMeta: OutboxStore['updateMeta'] = async (key, update) => {
    const meta = objectStore(await database(), STORE.meta, 'readwrite');
    const next = update(await request<Json | undefined>(meta.get(key)));
    if (next === undefined) meta.delete(key);
    else meta.put(next, key);
    await done(meta.transaction);
    return next;
  };

  return {
    ...idbReads(database),

    async replace(plan) {
      const db = await database();
      const durability = plan.durability === 'strict' ? 'strict' : 'default';
      const committed = await write(
        db,
        storesFor(plan),
        durability,
        async (tx) => (await applyPlans(tx, keys, [plan]))[0]!,
      );
      if (!committed) return 'stale';
      const notice = changeNoticeFor(plan);
      if (!closed) channel?.postMessage(notice);
      // BroadcastChannel does not deliver to its sender: this connection's listeners hear of
      // its own commits here, exactly once.
      listeners.emit(notice);
      return 'committed';
    },

    async replaceEach(plans) {
      if (plans.length === 0) return [];
      const db = await database();
      const stores = [...new Set(plans.flatMap(storesFor))];
      const durability = plans.some((p) => p.durability === 'strict') ? 'strict' : 'default';
      const results: ('committed' | 'stale')[] = [];
      await write(db, stores, durability, async (tx) => {
        // Each compare sees the writes of the plans before it.
        for (const holds of await applyPlans(tx, keys, plans))
          results.push(holds ? 'committed' : 'stale');
        return true;
      });
      const committed = plans.filter((_, i) => results[i] === 'committed');
      if (committed.length > 0) {
        const notice = mergedNotice(committed);
        if (!closed) channel?.postMessage(notice);
        listeners.emit(notice);
      }
      return results;
    },

    async prune(owner, { maxReceipts, olderThan, maxLedger, namesOlderThan }) {
      const db = await database();
      const due = await pruneDue(db, owner, { maxReceipts, olderThan, maxLedger, namesOlderThan });
      if (due.names) await dropUnnamed(db, owner, namesOlderThan!);
      if (due.receiptsOld) await dropOldest(db, STORE.receipts, ownerRange(owner, olderThan), 0);
      if (due.receipts) await dropOldest(db, STORE.receipts, ownerRange(owner), maxReceipts);
      if (due.conflicts) await dropOldest(db, STORE.conflicts, ownerRange(owner), maxLedger);
    },

    async setMeta(key: string, value: Json | undefined) {
      await updateMeta(key, () => value);
    },

    updateMeta,

    onChange(listener) {
      return listeners.add(listener);
    },

    close() {
      if (closed) return;
      closed = true;
      channel?.close();
      listeners.clear();
      current?.then((db) => db.close(), noop);
      current = undefined;
    },
  };
}

/** The store's reads (SPEC §3), each in a readonly transaction of its own on `database()`. */
function idbReads(
  database: () => Promise<OutboxDb>,
): Pick<
  OutboxStore,
  | 'get'
  | 'getMany'
  | 'scan'
  | 'holdingRows'
  | 'byTarget'
  | 'byTargets'
  | 'getReceipt'
  | 'listReceipts'
  | 'listConflicts'
  | 'getTombstone'
  | 'getName'
  | 'getMeta'
> {
  /**
   * The rows of records under both their names (§6.1), all read in one transaction: a batch's
   * records cost one transaction, not two per record. A row renamed between two of its reads is
   * caught by the `records` check of the plan made from them.
   */
  async function recordsRows(owner: string, records: readonly RecordLook[]): Promise<unknown[][]> {
    if (records.length === 0) return [];
    const tx = (await database()).transaction([STORE.names, STORE.rows], 'readonly');
    const names = tx.objectStore(STORE.names).index(INDEX.namesByServerId);
    const rows = tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerTarget);
    const read = async (collection: string, name: string, except: string | undefined) => {
      const range = IDBKeyRange.only([owner, collection, name]);
      // The row about to leave is the look's own: when it is all there is, its keys say so.
      if (except !== undefined) {
        const keys = await request(rows.getAllKeys(range));
        if (keys.every((key) => key === except)) return [];
      }
      return readAll(rows, range, owner);
    };
    return Promise.all(
      records.map(async ({ collection, targetId, except }) => {
        // A server id's rows and those of each `pending:<C>` that names it.
        const pending = mayHaveOtherNames(targetId)
          ? await request<RecordName[]>(names.getAll([owner, collection, targetId], 16))
          : [];
        const all = [targetId, ...pending.map((name) => name.pendingId)];
        return (await Promise.all(all.map((name) => read(collection, name, except)))).flat();
      }),
    );
  }

  return {
    async get(id, owner) {
      const rows = objectStore(await database(), STORE.rows);
      return visibleTo(await readable(request(rows.get(id)), id), owner);
    },

    async getMany(ids, owner) {
      if (ids.length === 0) return [];
      const rows = objectStore(await database(), STORE.rows);
      return Promise.all(
        ids.map(async (id) => visibleTo(await readable(request(rows.get(id)), id), owner)),
      );
    },

    async scan(owner, { after, limit }) {
      const db = await database();
      if (limit <= 0) return [];
      // Start strictly after the last row seen: re-opening at the index start would walk the
      // tombstones of every row already drained (SPEC §7, TOOLING).
      const lower = after ? [owner, after.savedAt, after.id] : [owner];
      const range = IDBKeyRange.bound(lower, [owner, []], after !== undefined, false);
      const rows = objectStore(db, STORE.rows).index(INDEX.rowsByOwnerSavedAt);
      return readAll(rows, range, owner, limit);
    },

    async holdingRows(owner) {
      const tx = (await database()).transaction(STORE.rows, 'readonly');
      const rows = tx.objectStore(STORE.rows);
      const [sending, following] = await Promise.all([
        request(rows.index(INDEX.rowsByOwnerState).getAll(IDBKeyRange.only([owner, 'sending']))),
        request(rows.index(INDEX.rowsByOwnerSuccessor).getAll(ownerRange(owner))),
      ]);
      // IndexedDB hands back `null` for a value it cannot deserialize: nobody's wire holds it.
      return [...sending, ...following].filter((value) => value !== null);
    },

    byTarget: async (owner, collection, targetId) =>
      (await recordsRows(owner, [{ collection, targetId }]))[0]!,

    byTargets: recordsRows,

    async getName(owner, pendingId) {
      const names = objectStore(await database(), STORE.names);
      return request<RecordName | undefined>(names.get([owner, pendingId]));
    },

    async getReceipt(requestId, owner) {
      const receipts = objectStore(await database(), STORE.receipts);
      return visibleTo(await request<Receipt | undefined>(receipts.get(requestId)), owner);
    },

    async listReceipts(owner, limit) {
      return newestFirst<Receipt>(await database(), STORE.receipts, owner, limit);
    },

    async listConflicts(owner, limit) {
      return newestFirst<ConflictLedgerEntry>(await database(), STORE.conflicts, owner, limit);
    },

    async getTombstone(id, owner) {
      const tombstones = objectStore(await database(), STORE.tombstones);
      return visibleTo(await request<Tombstone | undefined>(tombstones.get(id)), owner);
    },

    async getMeta(key) {
      return request<Json | undefined>(objectStore(await database(), STORE.meta).get(key));
    },
  };
}

/** One object store in a transaction of its own. */
function objectStore(db: OutboxDb, name: StoreName, mode?: IDBTransactionMode): IDBObjectStore {
  return db.transaction(name, mode).objectStore(name);
}

/** A row read by key: an unreadable one (IndexedDB says `null`) comes back as its stand-in. */
async function readable(read: Promise<unknown>, id: string): Promise<unknown> {
  const value = await read;
  return value === null ? unreadableValue(id) : value;
}

/**
 * The rows of an index range, in order. IndexedDB hands back `null` for a row it cannot
 * deserialize in this context; then the range is read again with a cursor, which has each row's
 * keys, and each such row comes back as its stand-in (G7: it is quarantined, not skipped). Rows
 * are never stored as `null`, so the common path reads the values only. Both reads are made in
 * the transaction of `rows`.
 */
async function readAll(
  rows: IDBIndex,
  range: IDBKeyRange,
  owner: string,
  limit?: number,
): Promise<unknown[]> {
  const values = await request(rows.getAll(range, limit));
  if (!values.includes(null)) return values;
  const found: unknown[] = [];
  await walk(rows.openCursor(range), ({ key, primaryKey, value }) => {
    // The `by_owner_savedAt` key carries the queue position, so a scan can continue after it.
    const savedAt = Array.isArray(key) && typeof key[1] === 'number' ? key[1] : undefined;
    found.push(value === null ? unreadableValue(primaryKey, owner, savedAt) : value);
    return limit === undefined || found.length < limit;
  });
  return found;
}

function storesFor(plan: ReplacePlan): StoreName[] {
  const stores: StoreName[] = [STORE.rows];
  if (plan.receipts?.length || plan.absent?.receipts?.length) stores.push(STORE.receipts);
  if (plan.ledger?.length || plan.ledgerDelete?.length) stores.push(STORE.conflicts);
  if (plan.tombstones?.length || plan.absent?.tombstones?.length) stores.push(STORE.tombstones);
  if (plan.seq?.length) stores.push(STORE.meta);
  if (plan.names?.length || plan.records?.length) stores.push(STORE.names);
  return stores;
}

/**
 * Runs `body` in one readwrite transaction and resolves once it committed (true) or, when `body`
 * returns false, after aborting it (nothing written). A storage fault rejects with the
 * transaction's own error (e.g. `QuotaExceededError`), which the core maps to `storage`.
 */
async function write(
  db: OutboxDb,
  stores: StoreName[],
  durability: IDBTransactionDurability,
  body: (tx: IDBTransaction) => Promise<boolean>,
): Promise<boolean> {
  const tx = db.transaction(stores, 'readwrite', { durability });
  const committed = done(tx);
  committed.catch(noop);
  try {
    if (!(await body(tx))) {
      abort(tx);
      return false;
    }
    await committed;
    return true;
  } catch (error) {
    abort(tx);
    throw tx.error ?? error;
  }
}

function abort(tx: IDBTransaction): void {
  try {
    tx.abort();
  } catch {
    // Already finished or aborted: nothing left to undo.
  }
}

/** Every entry of one owner in an index led by `owner` (`[]` sorts after any other key). */
function ownerRange(owner: string, below?: number): IDBKeyRange {
  return below === undefined
    ? IDBKeyRange.bound([owner], [owner, []])
    : IDBKeyRange.bound([owner], [owner, below], false, true);
}

async function newestFirst<T>(
  db: OutboxDb,
  store: 'receipts' | 'conflicts',
  owner: string,
  limit: number,
): Promise<T[]> {
  const found: T[] = [];
  if (limit <= 0) return found;
  const index = objectStore(db, store).index(INDEX.byOwnerSettledAt);
  await walk(index.openCursor(ownerRange(owner), 'prev'), ({ value }) => {
    found.push(value);
    return found.length < limit;
  });
  return found;
}

/**
 * What a prune has to do, counted in one readonly transaction: a flush ends with a prune, and
 * most find nothing to drop. The writes it saves would each wait for the drain's transactions and
 * hold up the next enqueue behind them (the names' prune writes over `rows`). What is added
 * between the count and the writes is dropped by the next prune.
 */
async function pruneDue(
  db: OutboxDb,
  owner: string,
  limits: { maxReceipts: number; olderThan: number; maxLedger: number; namesOlderThan?: number },
): Promise<{ names: boolean; receiptsOld: boolean; receipts: boolean; conflicts: boolean }> {
  const { maxReceipts, olderThan, maxLedger, namesOlderThan } = limits;
  const tx = db.transaction([STORE.receipts, STORE.conflicts, STORE.names], 'readonly');
  const count = (store: 'receipts' | 'conflicts' | 'names', range: IDBKeyRange) =>
    request(tx.objectStore(store).index(INDEX.byOwnerSettledAt).count(range));
  const [old, receipts, conflicts, names] = await Promise.all([
    count(STORE.receipts, ownerRange(owner, olderThan)),
    count(STORE.receipts, ownerRange(owner)),
    count(STORE.conflicts, ownerRange(owner)),
    namesOlderThan === undefined ? 0 : count(STORE.names, ownerRange(owner, namesOlderThan)),
  ]);
  return {
    names: names > 0,
    receiptsOld: old > 0,
    receipts: receipts - old > Math.max(0, maxReceipts),
    conflicts: conflicts > Math.max(0, maxLedger),
  };
}

/**
 * Deletes the record names of `owner` settled before `before` that no row names under either of
 * its ids (§6.1), in one transaction: names are few, one per settled create within retention.
 */
async function dropUnnamed(db: OutboxDb, owner: string, before: number): Promise<void> {
  await write(db, [STORE.names, STORE.rows], 'default', async (tx) => {
    const names = tx.objectStore(STORE.names);
    const old = await request(
      names.index(INDEX.byOwnerSettledAt).getAll(ownerRange(owner, before)) as IDBRequest<
        RecordName[]
      >,
    );
    const rows = tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerTarget);
    for (const name of old) {
      let named = 0;
      for (const id of [name.pendingId, name.serverId])
        named += await request(rows.count([owner, name.collection, id]));
      if (named === 0) names.delete([owner, name.pendingId]);
    }
    return true;
  });
}

/** Deletes the oldest entries of `range` beyond `keep`, a small transaction per batch. */
async function dropOldest(
  db: OutboxDb,
  store: 'receipts' | 'conflicts',
  range: IDBKeyRange,
  keep: number,
): Promise<void> {
  let more = true;
  while (more) {
    await write(db, [store], 'default', async (tx) => {
      const index = tx.objectStore(store).index(INDEX.byOwnerSettledAt);
      const excess = (await request(index.count(range))) - Math.max(0, keep);
      more = excess > PRUNE_BATCH;
      if (excess <= 0) return true;
      const keys = await request(index.getAllKeys(range, Math.min(excess, PRUNE_BATCH)));
      for (const key of keys) tx.objectStore(store).delete(key);
      return true;
    });
  }
}

/**
 * Opens the database and makes sure every declared store and index exists: a database created by
 * an older bundle gets the missing ones in an upgrade at its version + 1 (additive, SPEC §17).
 */
async function openOutboxDb(
  factory: IDBFactory,
  name: string,
  onBlocked: (() => void) | undefined,
  onLost: () => void,
): Promise<OutboxDb> {
  let raw = await openRaw(factory, name, undefined, onBlocked);
  if (lacksOutboxSchema(raw)) {
    const version = raw.version + 1;
    raw.close();
    raw = await openRaw(factory, name, version, onBlocked);
    if (lacksOutboxSchema(raw)) {
      raw.close();
      throw outboxError('storage', `Database ${name} lacks the outbox schema after upgrading.`);
    }
  }
  const db = raw;
  // Never block another connection's upgrade (SPEC §17): close now, reopen on the next call.
  db.addEventListener('versionchange', () => {
    db.close();
    onLost();
  });
  db.addEventListener('close', onLost);
  return db;
}

function openRaw(
  factory: IDBFactory,
  name: string,
  version: number | undefined,
  onBlocked: (() => void) | undefined,
): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = factory.open(name, version);
    request.onupgradeneeded = () => {
      if (request.transaction) createMissingStores(request.result, request.transaction);
    };
    request.onblocked = () => onBlocked?.();
    request.onsuccess = () => resolve(request.result);
    request.onerror = () =>
      reject(request.error ?? new DOMException('open failed', 'UnknownError'));
  });
}
