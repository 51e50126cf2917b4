/**
 * The v0 legacy page sender (SPEC §17), as an older bundle of the app shipped it: it writes rows
 * without `v`, sends them from the page, marks `state: "sending"` + `sentAt` before the request,
 * deletes its own row on success and requeues it on failure. It knows nothing of claims, writers,
 * evidence, successors or conflicts, ignores other holders' claims, and preserves every field it
 * does not know when it rewrites a row (it spreads the stored value). It imports nothing from
 * the current library on purpose. Tests drive it through `window.legacy`.
 */

interface V0Row {
  id: string;
  owner: string;
  collection: string;
  kind: string;
  targetId: string;
  savedAt: number;
  state: string;
  payload?: unknown;
  baseRevision?: number | null;
  sentAt?: number;
  request: {
    requestId: string;
    fingerprint: string;
    method: string;
    url: string;
    headers: Record<string, string>;
    body: string | null;
  };
  [unknown: string]: unknown;
}

const DB_NAME = 'sw-outbox';
const ROWS = 'rows';

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function openDb(): Promise<IDBDatabase> {
  // No version: v0 opens whatever the current bundle created and never upgrades it.
  const db = await request(indexedDB.open(DB_NAME));
  db.onversionchange = () => db.close();
  if (!db.objectStoreNames.contains(ROWS)) {
    db.close();
    throw new Error('v0: the outbox database does not exist yet');
  }
  return db;
}

async function withRows<T>(
  mode: IDBTransactionMode,
  work: (rows: IDBObjectStore) => Promise<T>,
): Promise<T> {
  const db = await openDb();
  try {
    const tx = db.transaction(ROWS, mode);
    const done = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
    const result = await work(tx.objectStore(ROWS));
    await done;
    return result;
  } finally {
    db.close();
  }
}

async function digest(body: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest('SHA-256', new TextEncoder().encode(body)),
  );
  return `sha-256=:${btoa(String.fromCharCode(...bytes))}:`;
}

interface EnqueueV0 {
  id: string;
  owner: string;
  collection: string;
  kind: string;
  targetId: string;
  payload: unknown;
  baseRevision?: number;
  url: string;
  method: string;
  /** Extra fields a v0 row may carry; they must survive every rewrite. */
  extra?: Record<string, unknown>;
}

const legacy = {
  async enqueue(input: EnqueueV0): Promise<V0Row> {
    const body = JSON.stringify(input.payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': `"${input.id}"`,
      'content-digest': await digest(body),
    };
    if (input.baseRevision !== undefined) headers['if-match'] = `"${input.baseRevision}"`;
    const row: V0Row = {
      ...input.extra,
      id: input.id,
      owner: input.owner,
      collection: input.collection,
      kind: input.kind,
      targetId: input.targetId,
      savedAt: Date.now(),
      state: 'queued',
      payload: input.payload,
      baseRevision: input.baseRevision ?? null,
      request: {
        requestId: input.id,
        fingerprint: `v0-${input.id}`,
        method: input.method,
        url: input.url,
        headers,
        body,
      },
    };
    await withRows('readwrite', async (rows) => request(rows.put(row)));
    return row;
  },

  get(id: string): Promise<V0Row | undefined> {
    return withRows('readonly', (rows) => request(rows.get(id)) as Promise<V0Row | undefined>);
  },

  /** Marks the row sending and sends it; resolves with the HTTP status once the answer is in. */
  async send(id: string, token: string): Promise<{ status: number; deleted: boolean }> {
    const marked = await withRows('readwrite', async (rows) => {
      const row = (await request(rows.get(id))) as V0Row | undefined;
      if (row === undefined) return undefined;
      const next = { ...row, state: 'sending', sentAt: Date.now() };
      await request(rows.put(next));
      return next;
    });
    if (marked === undefined) throw new Error(`v0: no row ${id}`);
    let status = 0;
    try {
      const response = await fetch(marked.request.url, {
        method: marked.request.method,
        headers: { ...marked.request.headers, authorization: `Bearer ${token}` },
        body: marked.request.body,
      });
      status = response.status;
    } catch {
      status = 0;
    }
    const ok = status >= 200 && status < 300;
    await withRows('readwrite', async (rows) => {
      if (ok) return request(rows.delete(id));
      const row = (await request(rows.get(id))) as V0Row | undefined;
      if (row !== undefined) await request(rows.put({ ...row, state: 'queued' }));
      return undefined;
    });
    return { status, deleted: ok };
  },
};

(globalThis as unknown as { legacy: typeof legacy }).legacy = legacy;
