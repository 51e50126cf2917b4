import { IDBDatabase as FakeDatabase, IDBFactory } from 'fake-indexeddb';
import { describe, expect, it, vi } from 'vitest';
import type { ChangeNotice, OutboxStore } from '../../shared/model/store.ts';
import { openIdbStore } from '../../shared/store/idb.ts';
import { changeChannelName, INDEX, OUTBOX_SCHEMA, STORE } from '../../shared/store/schema.ts';
import { describeStoreConformance } from './conformance.ts';

// One BroadcastChannel namespace per process: every test gets its own database name.
let databases = 0;
const freshName = () => `idb-test-${++databases}`;

describeStoreConformance('IndexedDB', () => {
  const indexedDB = new IDBFactory();
  const name = freshName();
  return { connect: () => openIdbStore({ name, indexedDB }) };
});

function openRaw(
  factory: IDBFactory,
  name: string,
  version?: number,
  upgrade?: (db: IDBDatabase) => void,
): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = factory.open(name, version);
    request.onupgradeneeded = () => upgrade?.(request.result);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

const row = {
  id: 'a',
  owner: 'u1',
  savedAt: 1,
  collection: 'notes',
  targetId: 'n_1',
  state: 'queued',
};
const putRow = { owner: 'u1', expected: [], put: [row], reason: 'enqueue' };

describe('IndexedDB store schema and lifecycle', () => {
  it('creates every declared store and index in a new database', async () => {
    const indexedDB = new IDBFactory();
    const name = freshName();
    (await openIdbStore({ name, indexedDB, broadcast: false })).close();
    const db = await openRaw(indexedDB, name);
    const names = Object.keys(OUTBOX_SCHEMA);
    expect([...db.objectStoreNames].sort()).toEqual([...names].sort());
    const tx = db.transaction(names);
    for (const [store, declaration] of Object.entries(OUTBOX_SCHEMA)) {
      const objectStore = tx.objectStore(store);
      expect(objectStore.keyPath).toEqual(declaration.keyPath);
      for (const [index, keyPath] of Object.entries(declaration.indexes)) {
        expect(objectStore.index(index).keyPath).toEqual(keyPath);
      }
    }
    expect(tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerSavedAt).keyPath).toEqual([
      'owner',
      'savedAt',
      'id',
    ]);
    db.close();
  });

  it('closes on versionchange so an upgrade proceeds, then reopens on the next call', async () => {
    const indexedDB = new IDBFactory();
    const name = freshName();
    const store = await openIdbStore({ name, indexedDB, broadcast: false });
    await store.replace(putRow);
    const newer = await openRaw(indexedDB, name, 5, (db) => db.createObjectStore('future'));
    expect(newer.version).toBe(5);
    newer.close();
    expect(await store.get('a')).toEqual(row);
    store.close();
  });

  it('adds missing stores to an older database, keeping its rows, and reports a blocked upgrade', async () => {
    const indexedDB = new IDBFactory();
    const name = freshName();
    const legacy = await openRaw(indexedDB, name, 1, (db) =>
      db.createObjectStore('rows', { keyPath: 'id' }),
    );
    await request(legacy.transaction('rows', 'readwrite').objectStore('rows').put(row));
    // An old tab that ignores versionchange keeps the upgrade waiting.
    let blocked = 0;
    const opening = openIdbStore({
      name,
      indexedDB,
      broadcast: false,
      onUpgradeBlocked: () => blocked++,
    });
    await expect.poll(() => blocked).toBe(1);
    legacy.close();
    const store = await opening;
    expect(await store.scan('u1', { limit: 10 })).toEqual([row]);
    expect(await store.byTarget('u1', 'notes', 'n_1')).toEqual([row]);
    store.close();
  });

  it('announces each commit on BroadcastChannel sw-outbox:<name>', async () => {
    const name = freshName();
    const store = await openIdbStore({ name, indexedDB: new IDBFactory() });
    const channel = new BroadcastChannel(changeChannelName(name));
    const heard = new Promise<ChangeNotice>((resolve) => {
      channel.onmessage = (event: MessageEvent) => resolve(event.data);
    });
    await store.replace(putRow);
    expect(await heard).toEqual({ ids: ['a'], reason: 'enqueue', owner: 'u1' });
    channel.close();
    store.close();
  });

  it('keeps notices to its own listeners with broadcast off', async () => {
    const name = freshName();
    const indexedDB = new IDBFactory();
    const quiet: OutboxStore = await openIdbStore({ name, indexedDB, broadcast: false });
    const listening = await openIdbStore({ name, indexedDB });
    const own: string[] = [];
    const other: string[] = [];
    quiet.onChange((notice) => own.push(notice.reason));
    listening.onChange((notice) => other.push(notice.reason));
    await quiet.replace(putRow);
    await listening.replace({ ...putRow, put: [], delete: ['a'], reason: 'settle' });
    expect(own).toEqual(['enqueue']);
    expect(other).toEqual(['settle']);
    quiet.close();
    listening.close();
  });
});

describe('IndexedDB store prune', () => {
  /** The mode of every transaction the store opens while `run` runs. */
  async function transactionModes(run: () => Promise<unknown>): Promise<string[]> {
    const modes: string[] = [];
    const open = FakeDatabase.prototype.transaction;
    const spy = vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (
      this: IDBDatabase,
      ...args: Parameters<typeof open>
    ) {
      modes.push(args[1] ?? 'readonly');
      return open.apply(this, args);
    });
    try {
      await run();
    } finally {
      spy.mockRestore();
    }
    return modes;
  }

  const receiptOf = (requestId: string, settledAt: number) => ({
    requestId,
    owner: 'u1',
    rowId: requestId,
    collection: 'notes',
    kind: 'create',
    targetId: 'pending:c1',
    status: 201,
    body: null,
    settledAt,
  });

  it('takes no write transaction when nothing is due, so a flush’s prune holds up no enqueue', async () => {
    const store = await openIdbStore({ name: freshName(), indexedDB: new IDBFactory() });
    await store.replace({ ...putRow, receipts: [receiptOf('r1', 5), receiptOf('r2', 6)] });
    const limits = { maxReceipts: 2, olderThan: 0, maxLedger: 10, namesOlderThan: 0 };
    expect(await transactionModes(() => store.prune('u1', limits))).toEqual(['readonly']);
    expect(await store.getReceipt('r1')).toBeDefined();

    // One receipt over the cap: it is counted, then dropped in a write of its own.
    const modes = await transactionModes(() => store.prune('u1', { ...limits, maxReceipts: 1 }));
    expect(modes).toEqual(['readonly', 'readwrite']);
    expect(await store.getReceipt('r1')).toBeUndefined();
    expect(await store.getReceipt('r2')).toBeDefined();
    store.close();
  });
});
