/**
 * The Workbox app's page: it writes with plain `fetch` (no outbox API at all, as an app built on
 * `BackgroundSyncPlugin` does) and lets the test look into both IndexedDB databases.
 */

async function readAll(dbName: string, store: string): Promise<unknown[]> {
  const names = (await indexedDB.databases()).map((d) => d.name);
  if (!names.includes(dbName)) return [];
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open(dbName);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    if (!db.objectStoreNames.contains(store)) return [];
    return await new Promise((resolve, reject) => {
      const request = db.transaction(store).objectStore(store).getAll();
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

const wb = {
  /** Registers (or updates to) a worker script for `/workbox/`. */
  async register(script: string): Promise<void> {
    await navigator.serviceWorker.register(script, { scope: '/workbox/' });
  },
  async controlled(): Promise<void> {
    if (navigator.serviceWorker.controller) return;
    await new Promise((resolve) =>
      navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }),
    );
  },
  async login(user: string): Promise<string> {
    const response = await fetch('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user }),
    });
    return ((await response.json()) as { token: string }).token;
  },
  /** One write as the app makes it; resolves with the status, or the error's name. */
  async write(path: string, title: string, token: string): Promise<number | string> {
    try {
      const response = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ title }),
      });
      return response.status;
    } catch (error) {
      return (error as Error).name;
    }
  },
  workboxEntries: () => readAll('workbox-background-sync', 'requests'),
  outboxRows: () => readAll('sw-outbox', 'rows'),
  /** Every record of the outbox's database (rows, meta, receipts, …), by store. */
  async outboxDatabase(): Promise<Record<string, unknown[]>> {
    const out: Record<string, unknown[]> = {};
    for (const store of ['rows', 'meta', 'receipts', 'tombstones', 'conflicts'])
      out[store] = await readAll('sw-outbox', store);
    return out;
  },
};

Object.assign(globalThis, { wb });
