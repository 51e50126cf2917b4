// @vitest-environment happy-dom
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { connectOutbox, type OutboxClient } from '../../client/connect.ts';
import type { PersistWhen } from '../../client/outbox-calls.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §23, persistence: the page asks `navigator.storage.persist()` at the moment the app chose
 * (never, the first enqueue, the app's installation) or when it calls `requestPersistence()`,
 * and `health()` reports what the browser says.
 */

const persist = vi.fn(async () => true);
const persisted = vi.fn(async () => persist.mock.calls.length > 0);
let outbox: OutboxClient | undefined;

beforeEach(() => {
  globalThis.indexedDB = new IDBFactory();
  persist.mockClear();
  Object.defineProperty(navigator, 'storage', {
    configurable: true,
    value: { persist, persisted, estimate: async () => ({ usage: 1_000, quota: 1_000_000 }) },
  });
});
afterEach(() => {
  outbox?.close();
  outbox = undefined;
});

async function connect(when?: PersistWhen) {
  outbox = await connectOutbox({
    swUrl: '/sw.js',
    owner: 'alice',
    periodicSync: false,
    ...(when === undefined ? {} : { persist: when }),
    pageSender: {
      collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
      allowedOrigins: ['http://localhost'],
      fetch: (async () => new Response(null, { status: 503 })) as typeof fetch,
      dbName: `persist-${Math.random()}`,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
    },
  });
  return outbox;
}

const create = (o: OutboxClient) =>
  o.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'x' } });

describe('persistent storage (SPEC §23)', () => {
  it('is never asked for unless the app says when', async () => {
    const o = await connect();
    await create(o);
    dispatchEvent(new Event('appinstalled'));
    expect(persist).not.toHaveBeenCalled();
    expect((await o.health()).storage).toEqual({
      persisted: false,
      usage: 1_000,
      quota: 1_000_000,
    });
  });

  it('is asked for once, with the first enqueue, and health() shows the answer', async () => {
    const o = await connect('first-enqueue');
    expect(persist).not.toHaveBeenCalled();
    await create(o);
    await create(o);
    expect(persist).toHaveBeenCalledTimes(1);
    expect((await o.health()).storage.persisted).toBe(true);
  });

  it('is asked for when the app is installed', async () => {
    const o = await connect('install');
    await create(o);
    expect(persist).not.toHaveBeenCalled();
    dispatchEvent(new Event('appinstalled'));
    expect(persist).toHaveBeenCalledTimes(1);
  });

  it('is asked for when the app calls requestPersistence, which answers what the browser said', async () => {
    const o = await connect('never');
    persist.mockResolvedValueOnce(false);
    expect(await o.requestPersistence()).toBe(false);
    expect(persist).toHaveBeenCalledTimes(1);
  });
});
