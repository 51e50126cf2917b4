/**
 * Promises over IndexedDB's request events, for the stores that speak to IndexedDB directly
 * (the outbox's `idb.ts`, the Workbox queue reader): a request's result, a transaction's commit,
 * a cursor walk.
 */

/** A request's result, once it succeeded. */
export function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** Resolves once the transaction committed; rejects with its error when it aborted. */
export function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error ?? new DOMException('Transaction aborted', 'AbortError'));
  });
}

/** Walks a cursor: `visit` sees each position and says whether to go on. */
export function walk(
  cursor: IDBRequest<IDBCursorWithValue | null>,
  visit: (at: IDBCursorWithValue) => boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    cursor.onsuccess = () => {
      const at = cursor.result;
      if (at && visit(at)) at.continue();
      else resolve();
    };
    cursor.onerror = () => reject(cursor.error);
  });
}
