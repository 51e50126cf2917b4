import { IDBFactory } from 'fake-indexeddb';
import { describe, expect, it, vi } from 'vitest';
import { startPageSender } from '../../client/page-sender.ts';
import { createRowFeed } from '../../shared/core/row-feed.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import type { AuthHook } from '../../shared/runtime/credentials.ts';
import { createEndpoint } from '../../shared/runtime/endpoint.ts';
import { createSender, type Sender } from '../../shared/runtime/sender.ts';
import { openIdbStore } from '../../shared/store/idb.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §13 "Credentials": a worker restarted without the page's (memory-only) token holds rows
 * instead of sending them anonymously; the page's next `setAuth` — sent again on every reconnect
 * — lets those rows go. Rows a server rejected with 401 wait for the app's `resumeHeld`.
 */

const OWNER = 'alice';
const TOKENS: Record<string, number> = { 'Bearer good': 201, 'Bearer expired': 401 };

/** Senders on one database, each with its own connection, and one server that logs requests. */
function world(kind: 'memory' | 'idb' = 'memory', broadcast = false) {
  const name = `auth-${Math.random()}`;
  const factory = new IDBFactory();
  const open = async () =>
    kind === 'memory'
      ? createMemoryStore({ name })
      : openIdbStore({ name, indexedDB: factory, broadcast });
  const seen: Array<{ key: string | null; auth: string | null }> = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    const auth = headers.get('authorization');
    seen.push({ key: headers.get('idempotency-key'), auth });
    const status = (auth === null ? undefined : TOKENS[auth]) ?? 401;
    return status === 201
      ? new Response(JSON.stringify({ id: `n${seen.length}`, revision: 1 }), {
          status,
          headers: { 'content-type': 'application/json', etag: '"1"' },
        })
      : new Response(null, { status, headers: { 'www-authenticate': 'Bearer' } });
  }) as typeof globalThis.fetch;
  const collections = { notes: restHandler({ baseUrl: '/api/notes' }) };
  /** A page sender as `connectOutbox` starts it in a tab no worker controls (§12). */
  const pageSender = () => startPageSender({ collections, store: open, fetch }, OWNER);
  const start = (
    sender: 'sw' | 'tab' = 'sw',
    config: { auth?: AuthHook; wrapStore?: (store: OutboxStore) => OutboxStore } = {},
  ): Sender =>
    createSender(
      {
        collections,
        store: async () => (config.wrapStore ?? ((store) => store))(await open()),
        fetch,
        ...(config.auth ? { auth: config.auth } : {}),
      },
      { kind: sender, owners: async () => [OWNER] },
    );
  const connect = async (sender: Sender) => {
    const api = (await sender.core()).forOwner(OWNER);
    return createEndpoint({
      owner: OWNER,
      holderId: sender.holderId,
      bundle: 'test',
      api,
      feed: createRowFeed(api, await sender.store(), OWNER),
      credentials: sender.credentials,
      sender,
    }).api;
  };
  return { seen, start, connect, pageSender };
}

/** The store with its own `replaceEach`; every other method is the store's. */
function withReplaceEach(store: OutboxStore, replaceEach: OutboxStore['replaceEach']): OutboxStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'replaceEach') return replaceEach;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const statusOf = async (sender: Sender, id: string) =>
  (await (await sender.core()).forOwner(OWNER).row(id))?.status;

/**
 * A row enqueued by a page that handed over a memory-only token, then a worker restart (the
 * browser stopped it) whose first flush finds no token.
 */
async function heldAfterRestart(w: ReturnType<typeof world>) {
  const page = await w.connect(w.start());
  await page.setAuth({ authorization: 'Bearer good' });
  const { id } = await page.enqueue({ collection: 'notes', kind: 'create', payload: { t: 1 } });
  const restarted = w.start();
  const report = await (await restarted.core()).flush(OWNER);
  return { id, restarted, report };
}

describe('credentials handed over after a restart (SPEC §13)', () => {
  it('rows held for want of credentials go once the page hands them over again', async () => {
    const w = world();
    const { seen, connect } = w;
    const { id, restarted, report } = await heldAfterRestart(w);
    expect(report.held).toBe(1);
    expect(await statusOf(restarted, id)).toBe('held');
    expect(seen).toEqual([]);

    // The page reconnects and hands its token over again: the row goes, with it.
    await (await connect(restarted)).setAuth({ authorization: 'Bearer good' });
    await vi.waitFor(async () => expect(await statusOf(restarted, id)).toBeUndefined(), {
      timeout: 5_000,
    });
    expect(seen).toEqual([{ key: `"${id}"`, auth: 'Bearer good' }]);
  });

  it('rows a server answered 401 stay held until the app calls resumeHeld', async () => {
    const { seen, start, connect } = world();
    const sender = start();
    const page = await connect(sender);
    await page.setAuth({ authorization: 'Bearer expired' });
    const { id } = await page.enqueue({ collection: 'notes', kind: 'create', payload: { t: 2 } });
    await (await sender.core()).flush(OWNER);
    expect(await statusOf(sender, id)).toBe('held');

    await page.setAuth({ authorization: 'Bearer good' });
    expect(await statusOf(sender, id)).toBe('held');
    expect(seen).toHaveLength(1);

    expect(await page.resumeHeld()).toBe(1);
    await (await sender.core()).flush(OWNER);
    expect(await statusOf(sender, id)).toBeUndefined();
    expect(seen.map((s) => s.auth)).toEqual(['Bearer expired', 'Bearer good']);
  });

  it('forgetting the credentials resumes nothing', async () => {
    const w = world();
    const { id, restarted } = await heldAfterRestart(w);
    await (await w.connect(restarted)).setAuth(null);
    expect(await statusOf(restarted, id)).toBe('held');
    expect(w.seen).toEqual([]);
  });
});

describe.each(['memory', 'idb'] as const)(
  'a row held for want of credentials (SPEC §13, %s)',
  (kind) => {
    /** A page sender with the user's token enqueues; a worker starting meanwhile has none. */
    async function heldByWorker(
      pageToken: string,
      wrapStore?: (store: OutboxStore, worker: () => Sender) => OutboxStore,
    ) {
      const w = world(kind);
      const worker = w.start('sw');
      const page = w.start(
        'tab',
        wrapStore ? { wrapStore: (store) => wrapStore(store, () => worker) } : {},
      );
      await page.credentials.set(OWNER, { authorization: pageToken });
      const api = (await page.core()).forOwner(OWNER);
      const { id } = await api.enqueue({ collection: 'notes', kind: 'create', payload: { t: 3 } });
      return { w, page, worker, id };
    }

    it('is sent, once, by any holder that has the credentials', async () => {
      const { w, page, worker, id } = await heldByWorker('Bearer good');
      // The worker claims the row first and, finding no credentials, holds it: never anonymous.
      expect((await (await worker.core()).flush(OWNER)).held).toBe(1);
      expect((await (await worker.core()).flush(OWNER)).claimed).toBe(0);
      expect(await statusOf(page, id)).toBe('held');
      expect(w.seen).toEqual([]);

      // The page sender has them: its next flush sends the row, without a setAuth.
      const report = await (await page.core()).flush(OWNER);
      expect(report).toMatchObject({ claimed: 1, succeeded: 1, held: 0 });
      expect(await statusOf(page, id)).toBeUndefined();
      expect((await (await page.core()).flush(OWNER)).claimed).toBe(0);
      expect(w.seen).toEqual([{ key: `"${id}"`, auth: 'Bearer good' }]);
    });

    it('is sent by the page sender whose claim the worker beat, in the same flush', async () => {
      // The page's scan finds the row queued; before its claim lands, the worker (no credentials)
      // claims the row and holds it.
      let raced = false;
      const { w, page, id } = await heldByWorker('Bearer good', (store, worker) =>
        withReplaceEach(store, async (plans) => {
          if (!raced && plans.some((plan) => plan.reason === 'claim')) {
            raced = true;
            expect((await (await worker().core()).flush(OWNER)).held).toBe(1);
          }
          return store.replaceEach(plans);
        }),
      );
      const report = await (await page.core()).flush(OWNER);
      expect(raced).toBe(true);
      expect(report).toMatchObject({ stale: 1, claimed: 1, succeeded: 1 });
      expect(await statusOf(page, id)).toBeUndefined();
      expect(w.seen).toEqual([{ key: `"${id}"`, auth: 'Bearer good' }]);
    });

    it('a row held again because the credentials went meanwhile waits for the next flush', async () => {
      const { w, page, worker, id } = await heldByWorker('Bearer good');
      await (await worker.core()).flush(OWNER);
      // The app's hook has a token when the flush starts, none any more when the request leaves.
      const tokens = [{ authorization: 'Bearer good' }, null];
      const third = w.start('sw', { auth: () => tokens.shift() ?? null });
      const report = await (await third.core()).flush(OWNER);
      expect(report).toMatchObject({ claimed: 1, held: 1, succeeded: 0 });
      expect(await statusOf(page, id)).toBe('held');
      expect(w.seen).toEqual([]);
    });

    it('is sent at once by a page sender that has the credentials when a worker holds it after the page’s flush', async () => {
      // Change notices cross connections as in a browser (a BroadcastChannel per database).
      const w = world(kind, true);
      const tab = w.pageSender();
      await (await tab.api()).setAuth({ authorization: 'Bearer good' });
      // The worker (no token) takes a row of the owner and holds it; the tab is not asked to flush.
      const worker = w.start('sw');
      const api = (await worker.core()).forOwner(OWNER);
      const { id } = await api.enqueue({ collection: 'notes', kind: 'create', payload: { t: 4 } });
      expect((await (await worker.core()).flush(OWNER)).held).toBe(1);
      // The tab hears the holding commit and sends the row, well before its watchdog's 30 s.
      await vi.waitFor(async () => expect(await statusOf(worker, id)).toBeUndefined(), {
        timeout: 5_000,
      });
      expect(w.seen).toEqual([{ key: `"${id}"`, auth: 'Bearer good' }]);
      tab.stop();
    });

    it('a row a server answered 401 stays held for every holder until resumeHeld', async () => {
      const { w, page, worker, id } = await heldByWorker('Bearer expired');
      // The page's rejected token: the server answers 401 and the row is held.
      expect((await (await page.core()).flush(OWNER)).held).toBe(1);
      // A worker that has a good token does not send it again: only the app knows the token changed.
      await worker.credentials.set(OWNER, { authorization: 'Bearer good' });
      expect((await (await worker.core()).flush(OWNER)).claimed).toBe(0);
      expect(await statusOf(worker, id)).toBe('held');
      expect(w.seen.map((s) => s.auth)).toEqual(['Bearer expired']);

      expect(await (await worker.core()).forOwner(OWNER).resumeHeld()).toBe(1);
      expect((await (await worker.core()).flush(OWNER)).succeeded).toBe(1);
      expect(w.seen.map((s) => s.auth)).toEqual(['Bearer expired', 'Bearer good']);
    });
  },
);
