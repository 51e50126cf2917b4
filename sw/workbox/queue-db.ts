import { done, request } from '../../shared/store/idb-request.ts';

/**
 * The database `workbox-background-sync` 7 keeps its queues in (SPEC §22), read and emptied
 * entry by entry: database `workbox-background-sync`, object store `requests` (keyPath `id`,
 * auto-increment), index `queueName`. Queue order is `id` order within one queue name (Workbox's
 * `unshiftRequest` puts an entry back under `firstId - 1`, so ids may be 0 or negative).
 * Opening never creates the database: a worker that never ran Workbox leaves no trace of it.
 */

/** The database Workbox's `Queue` writes. */
export const WORKBOX_DB_NAME = 'workbox-background-sync';
const STORE = 'requests';
const QUEUE_INDEX = 'queueName';

/** An entry of a Workbox queue as Workbox stores it. */
export interface WorkboxQueueEntry {
  id: number;
  queueName: string;
  timestamp: number;
  requestData: {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: ArrayBuffer;
    [property: string]: unknown;
  };
  metadata?: unknown;
}

/** One open Workbox queue database. */
export interface WorkboxQueueDb {
  /** The entries of one queue, in queue order. */
  entries(queueName: string): Promise<WorkboxQueueEntry[]>;
  /** Deletes one entry in its own durable transaction. */
  delete(id: number): Promise<void>;
  close(): void;
}

/** Opens Workbox's queue database, or undefined when it does not exist or has no queue store. */
export async function openWorkboxQueueDb(
  name: string = WORKBOX_DB_NAME,
  factory: IDBFactory = indexedDB,
): Promise<WorkboxQueueDb | undefined> {
  const db = await new Promise<IDBDatabase | undefined>((resolve, reject) => {
    const opening = factory.open(name);
    opening.onupgradeneeded = () => {
      // The database does not exist: aborting the upgrade leaves it uncreated.
      opening.transaction?.abort();
    };
    opening.onsuccess = () => resolve(opening.result);
    opening.onerror = (event) => {
      event.preventDefault();
      if (opening.error?.name === 'AbortError') resolve(undefined);
      else reject(opening.error);
    };
    opening.onblocked = () => resolve(undefined);
  });
  if (db === undefined) return undefined;
  // Workbox may upgrade its own database later: never stand in its way.
  db.onversionchange = () => db.close();
  const store = db.objectStoreNames.contains(STORE)
    ? db.transaction(STORE).objectStore(STORE)
    : undefined;
  if (store === undefined || !store.indexNames.contains(QUEUE_INDEX)) {
    db.close();
    return undefined;
  }
  return {
    entries: (queueName) =>
      request(
        db
          .transaction(STORE)
          .objectStore(STORE)
          .index(QUEUE_INDEX)
          .getAll(IDBKeyRange.only(queueName)),
      ) as Promise<WorkboxQueueEntry[]>,
    async delete(id) {
      const tx = db.transaction(STORE, 'readwrite', { durability: 'strict' });
      tx.objectStore(STORE).delete(id);
      await done(tx);
    },
    close: () => db.close(),
  };
}
