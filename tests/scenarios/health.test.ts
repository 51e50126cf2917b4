import { IDBFactory } from 'fake-indexeddb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EndpointApi } from '../../shared/model/connection.ts';
import type { OutboxEvent } from '../../shared/model/page-api.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { openEndpoint } from '../../shared/runtime/open-endpoint.ts';
import { createSender, type Sender, type SenderConfig } from '../../shared/runtime/sender.ts';
import { openIdbStore } from '../../shared/store/idb.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §23 on a real sender and its endpoint, on both stores: `health()` names each cause only
 * the app can fix (held, blocked, quota, unreachable) and is healthy again once it is fixed; the
 * watchdog heals a lost wake-up timer and the row goes once; `exportTrace()` after a drain with
 * a 401 window holds the events and never the token.
 */

const OWNER = 'alice';
const GOOD = 'Bearer s3cr3t-good-token';
const EXPIRED = 'Bearer s3cr3t-expired-token';

type Answer = number | 'network';

/** One sender on a fresh database, a server whose answers the test sets, and a manual clock. */
function world(kind: 'memory' | 'idb', config: Partial<SenderConfig> = {}) {
  const name = `health-${Math.random()}`;
  const factory = new IDBFactory();
  let answer: (auth: string | null) => Answer = (auth) => (auth === GOOD ? 201 : 401);
  let quotaFull = false;
  const seen: Array<{ key: string | null; auth: string | null; status: Answer }> = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    const auth = headers.get('authorization');
    const status = answer(auth);
    seen.push({ key: headers.get('idempotency-key'), auth, status });
    if (status === 'network') throw new TypeError('Failed to fetch');
    return status === 201
      ? new Response(JSON.stringify({ id: `n${seen.length}`, revision: 1 }), {
          status,
          headers: { 'content-type': 'application/json', etag: '"1"' },
        })
      : new Response(JSON.stringify({ type: 'about:blank', title: 'no' }), {
          status,
          headers: { 'content-type': 'application/problem+json' },
        });
  }) as typeof globalThis.fetch;
  const open = async (): Promise<OutboxStore> => {
    const store =
      kind === 'memory'
        ? createMemoryStore({ name })
        : await openIdbStore({ name, indexedDB: factory, broadcast: false });
    // A full disk refuses every write the flush makes (the store's own quota error, §11).
    return new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        if (key !== 'replaceEach') return value.bind(target);
        return (...args: unknown[]) => {
          if (quotaFull) throw new DOMException('full', 'QuotaExceededError');
          return value.apply(target, args);
        };
      },
    });
  };
  const events: OutboxEvent[] = [];
  const sender = createSender(
    {
      collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
      store: open,
      fetch,
      // No wake-up of its own during a test: the test runs every flush.
      backoff: { baseMs: 3_600_000, maxMs: 3_600_000 },
      onEvent: (event) => events.push(event),
      ...config,
    },
    { kind: 'sw', owners: async () => [OWNER] },
  );
  return {
    sender,
    seen,
    events,
    setAnswer: (next: (auth: string | null) => Answer) => {
      answer = next;
    },
    setQuotaFull: (full: boolean) => {
      quotaFull = full;
    },
    page: async (): Promise<EndpointApi> => (await openEndpoint(sender, OWNER)).api,
    flush: async () => (await sender.scheduler.run('test', { force: true })).reports,
  };
}

const senders: Sender[] = [];
afterEach(() => {
  for (const sender of senders.splice(0)) {
    sender.scheduler.stop();
    sender.watchdog.stop();
  }
});

const enqueue = (page: EndpointApi, t: number) =>
  page.enqueue({ collection: 'notes', kind: 'create', payload: { t } });

describe.each(['memory', 'idb'] as const)('health() (SPEC §23, %s)', (kind) => {
  function start(config: Partial<SenderConfig> = {}) {
    const w = world(kind, config);
    senders.push(w.sender);
    return w;
  }

  it('an empty queue is healthy, with its sender and storage', async () => {
    const { page, sender } = start();
    const health = await (await page()).health();
    expect(health).toMatchObject({
      stalled: null,
      causes: [],
      total: 0,
      oldestPendingAgeMs: null,
      senders: { worker: sender.holderId },
    });
  });

  it('names rows held for credentials, and is healthy once the app hands them over', async () => {
    const w = start();
    const page = await w.page();
    await page.setAuth({ authorization: EXPIRED });
    await enqueue(page, 1);
    await w.flush();
    const held = await page.health();
    expect(held).toMatchObject({ stalled: 'held', counts: { held: 1 }, total: 1 });
    expect(w.events).toContainEqual({ type: 'stalled', cause: 'held', action: 'reported' });

    await page.setAuth({ authorization: GOOD });
    await page.resumeHeld();
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: null, total: 0 });
    expect((await page.health()).lastSuccessAt).not.toBeNull();
  });

  it('names rows blocked for the app, and is healthy once the app discards them', async () => {
    const w = start();
    const page = await w.page();
    await page.setAuth({ authorization: GOOD });
    w.setAnswer(() => 422);
    const { id } = await enqueue(page, 2);
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: 'blocked', counts: { blocked: 1 } });
    expect(w.events).toContainEqual({ type: 'stalled', cause: 'blocked', action: 'reported' });

    await page.discard(id);
    expect(await page.health()).toMatchObject({ stalled: null, total: 0 });
  });

  it('names a full disk, and is healthy once writes fit again', async () => {
    const w = start();
    const page = await w.page();
    await page.setAuth({ authorization: GOOD });
    await enqueue(page, 3);
    w.setQuotaFull(true);
    const reports = await w.flush();
    expect(reports[0]?.stopped).toBe('storage');
    expect(await page.health()).toMatchObject({ stalled: 'quota', causes: ['quota'] });
    expect(w.events).toContainEqual({ type: 'stalled', cause: 'quota', action: 'reported' });

    w.setQuotaFull(false);
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: null, total: 0 });
  });

  it('names a server unreachable for longer than the bound, and is healthy once it answers', async () => {
    let now = 1_000_000;
    const w = start({
      clock: { now: () => now },
      watchdog: { unreachableAfterMs: 60_000, stallAfterMs: 3_600_000 },
    });
    const page = await w.page();
    await page.setAuth({ authorization: GOOD });
    w.setAnswer(() => 'network');
    await enqueue(page, 4);
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: null, counts: { deferred: 1 } });
    now += 61_000;
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: 'unreachable' });
    expect(w.events).toContainEqual({ type: 'stalled', cause: 'unreachable', action: 'reported' });

    w.setAnswer(() => 201);
    await w.flush();
    expect(await page.health()).toMatchObject({ stalled: null, total: 0, lastSuccessAt: now });
  });

  it('an onEvent that throws stops neither a flush nor the watchdog, and the trace keeps the events', async () => {
    const w = start({
      onEvent: () => {
        throw new Error('app bug');
      },
    });
    const page = await w.page();
    await page.setAuth({ authorization: EXPIRED });
    await enqueue(page, 8);
    const [report] = await w.flush();
    expect(report).toMatchObject({ claimed: 1, held: 1 });
    expect(await page.health()).toMatchObject({ stalled: 'held' });
    expect(await page.exportTrace()).toContain('"type":"stalled","cause":"held"');
  });

  it('heals a lost wake-up timer within the bound: the row goes, once', async () => {
    const w = start({ backoff: { baseMs: 20, maxMs: 20 }, watchdog: { stallAfterMs: 50 } });
    const page = await w.page();
    await page.setAuth({ authorization: GOOD });
    let failures = 1;
    w.setAnswer(() => (failures-- > 0 ? 'network' : 201));
    const { id } = await enqueue(page, 5);
    await w.sender.scheduler.run('test');
    // The wake-up timer is lost (a worker stopped, a run that threw): nothing would flush again.
    w.sender.scheduler.releaseWake();
    expect(w.sender.progress().wakeAt).toBeNull();
    await vi.waitFor(async () => expect(await page.row(id)).toBeUndefined(), { timeout: 2_000 });
    expect(w.events).toContainEqual({ type: 'stalled', cause: 'not_attempted', action: 'healed' });
    const keys = w.seen.filter((s) => s.status === 201).map((s) => s.key);
    expect(keys).toEqual([`"${id}"`]);
    expect(await page.health()).toMatchObject({ stalled: null, total: 0 });
  });
});

describe.each(['memory', 'idb'] as const)('exportTrace() (SPEC §23, %s)', (kind) => {
  it('after a drain through a 401 window holds the events and never a token', async () => {
    const w = world(kind);
    senders.push(w.sender);
    const page = await w.page();
    await page.setAuth({ authorization: EXPIRED });
    const a = await enqueue(page, 6);
    const b = await enqueue(page, 7);
    await w.flush();
    const whileHeld = await page.exportTrace({ payloads: true });
    expect(whileHeld).toContain('"payload":{"t":6}');
    expect(await page.exportTrace()).not.toContain('"payload"');

    await page.setAuth({ authorization: GOOD });
    await page.resumeHeld();
    await w.flush();
    expect(w.seen.map((s) => s.status)).toEqual([401, 401, 201, 201]);

    for (const trace of [
      whileHeld,
      await page.exportTrace(),
      await page.exportTrace({ payloads: true }),
    ]) {
      for (const secret of [GOOD, EXPIRED, 's3cr3t', 'Bearer']) expect(trace).not.toContain(secret);
    }
    const lines = (await page.exportTrace())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    const types = lines.map((line) => line.type);
    expect(types).toEqual(
      expect.arrayContaining(['enqueued', 'claimed', 'settled', 'held', 'stalled']),
    );
    for (const id of [a.id, b.id]) {
      expect(
        lines.filter((l) => l.id === id && l.type === 'settled').map((l) => l.outcome),
      ).toEqual(['auth', 'success']);
    }
    expect(lines.every((line) => typeof line.at === 'number')).toBe(true);
  });
});
