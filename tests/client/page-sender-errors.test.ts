// @vitest-environment happy-dom
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connectOutbox, type OutboxClient } from '../../client/connect.ts';
import type { PageSenderConfig } from '../../client/page-sender.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §13 (errors carry a `code`): in a page no worker controls, the page sender serves the
 * calls, and its errors are typed like the worker's: a store that cannot open fails them with
 * `storage`, as the worker refuses a connection then, not with the browser's bare error.
 */

const TIMEOUT_MS = 150;

const config = (store: () => Promise<OutboxStore>): PageSenderConfig => ({
  collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
  allowedOrigins: ['http://localhost'],
  fetch: (async () => new Response(null, { status: 503 })) as unknown as typeof fetch,
  store,
});

const connect = (store: () => Promise<OutboxStore>) =>
  connectOutbox({
    swUrl: '/sw.js',
    owner: 'alice',
    periodicSync: false,
    timeoutMs: TIMEOUT_MS,
    flushTimeoutMs: TIMEOUT_MS,
    pageSender: config(store),
  });

let outbox: OutboxClient | undefined;

// `connectOutbox` loads the page sender on demand; loaded here first, only the calls are timed.
beforeAll(() => import('../../client/page-sender.ts'));

beforeEach(() => {
  globalThis.indexedDB = new IDBFactory();
});
afterEach(() => {
  outbox?.close();
  outbox = undefined;
});

describe('the page sender’s errors are typed (SPEC §13)', () => {
  it('connecting fails with storage when the store cannot open', async () => {
    const refused = new DOMException('A mutation operation was attempted', 'InvalidStateError');
    await expect(connect(() => Promise.reject(refused))).rejects.toMatchObject({
      name: 'OutboxError',
      code: 'storage',
      message: expect.stringContaining('InvalidStateError'),
    });
  });

  it('connecting fails with timeout when the store never opens (an upgrade blocked by another tab)', async () => {
    const started = performance.now();
    await expect(connect(() => new Promise<OutboxStore>(() => {}))).rejects.toMatchObject({
      name: 'OutboxError',
      code: 'timeout',
    });
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS * 10);
  });

  it('a call fails with timeout when the store stops answering, and a later call is served', async () => {
    let hang = false;
    const store = createMemoryStore({ name: `hangs-${Math.random()}` });
    // Every read and write of the store waits for ever while `hang` is set.
    const hanging = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        if (key === 'close' || key === 'onChange') return value.bind(target);
        return (...args: unknown[]) =>
          hang ? new Promise(() => {}) : Reflect.apply(value, target, args);
      },
    });
    outbox = await connect(async () => hanging);
    await outbox.flush();
    hang = true;
    const note = { collection: 'notes', kind: 'create', payload: { title: 'stuck' } } as const;
    await expect(outbox.enqueue(note)).rejects.toMatchObject({
      name: 'OutboxError',
      code: 'timeout',
    });
    hang = false;
    await expect(outbox.stats()).resolves.toMatchObject({ total: 0 });
  });
});
