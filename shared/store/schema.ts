import type { DBSchema } from 'idb';
import type { Json } from '../model/json.ts';
import type { ConflictLedgerEntry, Receipt, RecordName, Tombstone } from '../model/store.ts';

/** The database name when the app configures none (SPEC §2). */
export const DEFAULT_DB_NAME = 'sw-outbox';

/**
 * The version a new database is created at. Later schema additions do not bump a constant: a
 * connection that finds a declared store or index missing reopens at the current version + 1 and
 * creates only what is missing (SPEC §17, additive), so bundles of different ages share one
 * database without a `VersionError`.
 */
export const INITIAL_DB_VERSION = 1;

/** The BroadcastChannel on which every committed `replace` is announced (SPEC §3). */
export function changeChannelName(dbName: string): string {
  return `sw-outbox:${dbName}`;
}

/** Object store names. */
export const STORE = {
  rows: 'rows',
  receipts: 'receipts',
  conflicts: 'conflicts',
  tombstones: 'tombstones',
  meta: 'meta',
  names: 'names',
} as const;

/** A store name of {@link STORE}. */
export type StoreName = (typeof STORE)[keyof typeof STORE];

/** Index names. Receipts and conflicts share one name, each on its own store. */
export const INDEX = {
  rowsByOwnerSavedAt: 'by_owner_savedAt',
  rowsByOwnerTarget: 'by_owner_target',
  rowsByOwnerState: 'by_owner_state',
  rowsByOwnerSuccessor: 'by_owner_successor',
  byOwnerSettledAt: 'by_owner_settledAt',
  namesByServerId: 'by_owner_server',
} as const;

/** One object store: its key path (null = out-of-line keys) and its indexes' key paths. */
export interface StoreDeclaration {
  readonly keyPath: string | readonly string[] | null;
  readonly indexes: Readonly<Record<string, readonly string[]>>;
}

/**
 * The whole schema as data, read by the IndexedDB upgrade and mirrored by the memory store.
 *
 * `by_owner_savedAt` carries `id` as a third component (SPEC §2 names `[owner, savedAt]`): the
 * order is the same, since IndexedDB breaks index ties by primary key, but a plain key range can
 * then continue strictly after the last row seen (SPEC §7; re-opening at the index start walks
 * every tombstone of the rows already drained).
 */
export const OUTBOX_SCHEMA: Readonly<Record<StoreName, StoreDeclaration>> = {
  rows: {
    keyPath: 'id',
    indexes: {
      [INDEX.rowsByOwnerSavedAt]: ['owner', 'savedAt', 'id'],
      [INDEX.rowsByOwnerTarget]: ['owner', 'collection', 'targetId'],
      // The rows that may hold others wherever the queue puts them (§6.1): those on the wire,
      // and those that follow another row (successors and intents).
      [INDEX.rowsByOwnerState]: ['owner', 'state'],
      [INDEX.rowsByOwnerSuccessor]: ['owner', 'successorOf'],
    },
  },
  receipts: { keyPath: 'requestId', indexes: { [INDEX.byOwnerSettledAt]: ['owner', 'settledAt'] } },
  conflicts: {
    keyPath: 'successorId',
    indexes: { [INDEX.byOwnerSettledAt]: ['owner', 'settledAt'] },
  },
  tombstones: { keyPath: 'id', indexes: {} },
  meta: { keyPath: null, indexes: {} },
  // One record, one name (§6.1): `pending:<C>` → server id, and back by the server id.
  names: {
    keyPath: ['owner', 'pendingId'],
    indexes: {
      [INDEX.namesByServerId]: ['owner', 'collection', 'serverId'],
      [INDEX.byOwnerSettledAt]: ['owner', 'settledAt'],
    },
  },
};

/** The typed view of the schema for `idb`. Rows stay `unknown`: they are parsed by the core. */
export interface OutboxDbSchema extends DBSchema {
  rows: {
    key: string;
    value: unknown;
    indexes: {
      by_owner_savedAt: [string, number, string];
      by_owner_target: [string, string, string];
      by_owner_state: [string, string];
      by_owner_successor: [string, string];
    };
  };
  receipts: { key: string; value: Receipt; indexes: { by_owner_settledAt: [string, number] } };
  conflicts: {
    key: string;
    value: ConflictLedgerEntry;
    indexes: { by_owner_settledAt: [string, number] };
  };
  tombstones: { key: string; value: Tombstone };
  meta: { key: string; value: Json };
  names: {
    key: [string, string];
    value: RecordName;
    indexes: { by_owner_server: [string, string, string]; by_owner_settledAt: [string, number] };
  };
}

/**
 * Creates every declared store and index the database lacks, inside its upgrade transaction.
 * Additive only (SPEC §17): nothing existing is changed or removed, so older bundles keep working.
 */
export function createMissingStores(db: IDBDatabase, upgrade: IDBTransaction): void {
  for (const [name, declaration] of Object.entries(OUTBOX_SCHEMA)) {
    const store = db.objectStoreNames.contains(name)
      ? upgrade.objectStore(name)
      : db.createObjectStore(
          name,
          declaration.keyPath === null ? {} : { keyPath: declaration.keyPath as string | string[] },
        );
    for (const [index, keyPath] of Object.entries(declaration.indexes)) {
      if (!store.indexNames.contains(index)) store.createIndex(index, [...keyPath]);
    }
  }
}

/** Whether an open database lacks a declared store or index (then it needs an upgrade). */
export function lacksOutboxSchema(db: IDBDatabase): boolean {
  const names = Object.keys(OUTBOX_SCHEMA) as StoreName[];
  if (names.some((name) => !db.objectStoreNames.contains(name))) return true;
  const inspect = db.transaction(names, 'readonly');
  return names.some((name) => {
    const present = inspect.objectStore(name).indexNames;
    return Object.keys(OUTBOX_SCHEMA[name].indexes).some((index) => !present.contains(index));
  });
}
