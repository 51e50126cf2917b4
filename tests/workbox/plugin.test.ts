import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { planKeyAge } from '../../shared/plan/key-retention.ts';
import { OutboxPlugin, type OutboxPluginOptions } from '../../sw/workbox/index.ts';
import { engineFor, FakeServer, freshIndexedDb, write } from './support.ts';

/**
 * SPEC §22, `OutboxPlugin` on Workbox's own `NetworkOnly` strategy: every request gets its key
 * before it first leaves, a network error or a transient status makes it a `requests` row under
 * that key, the page gets the configured answer, a URL with waiting rows keeps its order, and no
 * credential is stored.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

class FakeExtendableEvent extends Event {
  readonly pending: Promise<unknown>[] = [];
  waitUntil(promise: Promise<unknown>) {
    this.pending.push(promise);
  }
}

let NetworkOnly: typeof import('workbox-strategies').NetworkOnly;

beforeAll(async () => {
  // Workbox as a worker ships it: its production build (no development logging), with the
  // worker globals it reads.
  vi.stubEnv('NODE_ENV', 'production');
  Object.assign(globalThis, {
    self: globalThis,
    location: new URL('http://localhost/'),
    ExtendableEvent: FakeExtendableEvent,
    FetchEvent: FakeExtendableEvent,
  });
  ({ NetworkOnly } = await import('workbox-strategies'));
});

beforeEach(() => {
  freshIndexedDb();
});

function world(options: Partial<OutboxPluginOptions> = {}, auth?: Record<string, string> | null) {
  const server = new FakeServer();
  // Backoff longer than a test: a row that failed stays put unless the test flushes.
  const engine = engineFor(server, {
    backoff: { baseMs: 60_000, maxMs: 60_000 },
    ...(auth === undefined ? {} : { auth }),
  });
  // The strategy fetches with the global fetch, as in a worker; the engine uses its port.
  const network = new FakeServer();
  vi.stubGlobal('fetch', network.fetch);
  const strategy = new NetworkOnly({
    plugins: [new OutboxPlugin({ engine, owner: 'alice', ...options })],
  });
  const handle = async (request: Request) => {
    const event = new FakeExtendableEvent('fetch');
    try {
      return await strategy.handle({ request, event: event as unknown as ExtendableEvent });
    } finally {
      await Promise.allSettled(event.pending);
    }
  };
  const rows = async () =>
    (await (await engine.forOwner('alice')).rows()).map((v) => v.row as OutboxRow);
  return { server, network, engine, handle, rows };
}

describe('OutboxPlugin', () => {
  it('sends the first attempt with the key the row keeps, so a lost answer is replayed once', async () => {
    const { network, server, handle, rows, engine } = world();
    network.failures = ['drop']; // applied, then the answer is lost
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    const first = network.seen[0]!;
    const key = first.headers['idempotency-key'];
    expect(key).toMatch(/^"requests-[0-9a-f]{24}"$/);
    expect(first.headers['content-digest']).toMatch(/^sha-256=:/);
    // The page's own request kept its credentials for this first attempt.
    expect(first.headers.authorization).toBe('Bearer secret');
    // The row is the same request under the same key, without the credentials. (The plugin's
    // own flush may already have sent it, the engine's fetch being the other fake server.)
    await engine.flush({ force: true });
    expect(server.seen[0]).toMatchObject({ method: 'POST', body: '{"title":"x"}' });
    expect(server.seen[0]!.headers['idempotency-key']).toBe(key);
    // The row kept no credentials: its replay carries the worker's own, never the page's.
    expect(server.seen[0]!.headers.authorization).toBe('Bearer worker');
    expect(server.seen[0]!.headers['content-digest']).toBe(first.headers['content-digest']);
    expect(await rows()).toEqual([]);
  });

  it('writes a request that left as attempted (G2): a lost answer may have applied it, so its key is asked about past the retention; a 503 applied nothing', async () => {
    const { network, handle, rows, engine } = world();
    // The rows as the plugin wrote them: no flush of the engine's own touches them.
    engine.flush = async () => ({ sent: 0, remaining: 0 }) as never;
    network.failures = ['drop', 503];
    await expect(handle(write('/api/notes/a', { title: 'lost' }))).rejects.toThrow();
    expect((await handle(write('/api/notes/b', { title: 'busy' }))).status).toBe(503);
    const [lost, busy] = await rows();
    expect(lost!.evidence).toMatchObject({
      attemptCount: 1,
      lastErrorCode: 'network',
      mayHaveApplied: true,
    });
    expect(lost!.evidence!.firstAttemptAt).toBeTypeOf('number');
    expect(
      planKeyAge(lost!, {
        now: lost!.evidence!.firstAttemptAt! + 8 * DAY_MS,
        retentionMs: undefined,
      }),
    ).toBe('ask');
    expect(busy!.evidence).toMatchObject({ attemptCount: 1, lastErrorCode: 'http_503' });
    expect(busy!.evidence!.mayHaveApplied).toBeUndefined();
    expect(
      planKeyAge(busy!, {
        now: busy!.evidence!.firstAttemptAt! + 8 * DAY_MS,
        retentionMs: undefined,
      }),
    ).toBe('send');
  });

  it('answers a queued request with 202 and the row id when asked to', async () => {
    const { network, handle, server } = world({ answer: 'accepted' });
    network.failures = ['network'];
    server.failures = Array(9).fill('network');
    const response = await handle(write('/api/notes', { title: 'x' }));
    expect(response.status).toBe(202);
    const body = (await response.json()) as { queued: boolean; id: string };
    expect(body.queued).toBe(true);
    expect(network.seen[0]!.headers['idempotency-key']).toBe(`"${body.id}"`);
  });

  it('queues a transient status and passes it on; a permanent one is the page’s', async () => {
    const { network, handle, rows, server } = world();
    server.failures = Array(9).fill('network');
    network.failures = [503, 422];
    expect((await handle(write('/api/notes', { title: 'busy' }))).status).toBe(503);
    expect((await handle(write('/api/other', { title: 'bad' }))).status).toBe(422);
    const queued = await rows();
    expect(queued.map((r) => r.targetId)).toEqual(['http://localhost/api/notes']);
    expect(JSON.stringify(queued)).not.toContain('Bearer secret');
  });

  it('keeps a URL’s order: a request behind waiting rows is queued without going out', async () => {
    const { network, handle, rows, server } = world({ answer: 'accepted' });
    server.failures = Array(9).fill('network');
    network.failures = ['network'];
    await handle(write('/api/notes', { title: 'first' }));
    const second = await handle(write('/api/notes', { title: 'second' }));
    expect(second.status).toBe(202);
    expect(network.seen).toHaveLength(1); // the second never went ahead of the first
    const [a, b] = await rows();
    expect(b!.successorOf).toBe(a!.id);
    expect((b!.payload as { body: string }).body).toBe('{"title":"second"}');
  });

  it('keeps a URL’s order across a failure of a request that was on the wire (G4): the later one waits, then queues behind it', async () => {
    const { network, handle, rows, server, engine } = world({ answer: 'accepted' });
    server.failures = Array(9).fill('network');
    const gate = holdFirstFetch(network);
    const first = handle(write('/api/notes', { title: 'first' }));
    await gate.reached;
    const second = handle(write('/api/notes', { title: 'second' }));
    // The second waits while the first is on the wire: nothing of it leaves.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(gate.calls()).toBe(1);
    gate.fail();
    expect((await first).status).toBe(202);
    expect((await second).status).toBe(202);
    expect(gate.calls()).toBe(1); // the second never went out ahead of the first's row
    const [a, b] = await rows();
    expect((a!.payload as { body: string }).body).toBe('{"title":"first"}');
    expect(b!.successorOf).toBe(a!.id);
    server.failures = [];
    await engine.flush({ force: true });
    await engine.flush({ force: true });
    expect(server.effects.map((e) => e.body)).toEqual(['{"title":"first"}', '{"title":"second"}']);
  });

  it('keeps a URL’s order when the earlier request takes longer to be taken in (G4): its turn is its call’s, not its capture’s', async () => {
    const { network, handle, engine } = world();
    // The first request's credentials are new to the worker: their hand-over waits. The second
    // carries the same ones and has nothing to hand over.
    let handOver!: () => void;
    const handedOver = new Promise<void>((resolve) => {
      handOver = resolve;
    });
    const requireCredentials = engine.requireCredentials.bind(engine);
    engine.requireCredentials = async (owner) => {
      await handedOver;
      return requireCredentials(owner);
    };
    const first = handle(write('/api/notes/n1', { title: 'first' }));
    const second = handle(write('/api/notes/n1', { title: 'second' }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(network.seen).toEqual([]);
    handOver();
    expect((await first).status).toBe(201);
    expect((await second).status).toBe(201);
    expect(network.effects.map((e) => e.body)).toEqual(['{"title":"first"}', '{"title":"second"}']);
  });

  it('lets the later request of a URL go once the one on the wire succeeded', async () => {
    const { network, handle, rows } = world();
    const gate = holdFirstFetch(network);
    const first = handle(write('/api/notes', { title: 'first' }));
    await gate.reached;
    const second = handle(write('/api/notes', { title: 'second' }));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(gate.calls()).toBe(1);
    gate.succeed();
    expect((await first).status).toBe(201);
    expect((await second).status).toBe(201);
    expect(network.effects.map((e) => e.body)).toEqual(['{"title":"first"}', '{"title":"second"}']);
    expect(await rows()).toEqual([]);
  });

  it('does not hold a request of another URL behind one on the wire', async () => {
    const { network, handle } = world();
    const gate = holdFirstFetch(network);
    const first = handle(write('/api/notes', { title: 'first' }));
    await gate.reached;
    expect((await handle(write('/api/other', { title: 'other' }))).status).toBe(201);
    gate.succeed();
    expect((await first).status).toBe(201);
  });

  it('with rememberCredentials, replays carry the page’s credentials from worker memory, and nothing stores them', async () => {
    const { network, server, handle, rows, engine } = world({ rememberCredentials: true }, null);
    network.failures = ['network'];
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    // The plugin's own flush may already have sent the row; this one sends what is left.
    await engine.flush({ force: true });
    expect(await rows()).toEqual([]);
    expect(server.seen[0]!.headers.authorization).toBe('Bearer secret');
    expect(server.effects).toHaveLength(1);
    expect(await storedText()).not.toContain('Bearer secret');
  });

  it('with rememberCredentials, rows held for want of credentials go once a request hands them over', async () => {
    const { network, server, handle, rows, engine } = world({ rememberCredentials: true }, null);
    // The owner signed out: its rows wait held, never sent without credentials (§13).
    await engine.setAuth('alice', null);
    const api = await engine.forOwner('alice');
    await api.enqueue({
      collection: 'requests',
      kind: 'request',
      targetId: 'http://localhost/api/other',
      payload: { method: 'POST', url: 'http://localhost/api/other', headers: {}, body: '{"n":1}' },
    });
    await engine.flush({ force: true });
    expect(server.seen).toHaveLength(0);
    expect((await api.rows()).map((v) => v.status)).toEqual(['held']);
    // A request through the route carries the page's token: the held row goes with it.
    expect((await handle(write('/api/notes', { title: 'live' }))).status).toBe(201);
    await engine.flush({ force: true });
    expect(server.seen.map((r) => [r.body, r.headers.authorization])).toEqual([
      ['{"n":1}', 'Bearer secret'],
    ]);
    expect(await rows()).toEqual([]);
    expect(network.effects).toHaveLength(1);
  });

  it('never replays a request made with credentials without them (§13): the row waits held', async () => {
    const { network, server, handle, engine } = world({}, null);
    network.failures = ['network'];
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    await engine.flush({ force: true });
    expect(server.seen).toEqual([]);
    const api = await engine.forOwner('alice');
    expect((await api.rows()).map((v) => [v.status, v.row.evidence?.lastErrorCode])).toEqual([
      ['held', 'auth_required'],
    ]);
    // Credentials for the owner come back: the row goes with them, once.
    await engine.setAuth('alice', { authorization: 'Bearer back' });
    await engine.flush({ force: true });
    expect(server.seen.map((r) => r.headers.authorization)).toEqual(['Bearer back']);
  });

  it('sends no key at all when the server cannot honour one', async () => {
    const { network, handle, engine, server } = world({ idempotencyHeader: null });
    network.failures = ['network'];
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    await engine.flush({ force: true });
    for (const seen of [network.seen[0]!, server.seen.at(-1)!]) {
      expect(seen.headers['idempotency-key']).toBeUndefined();
      expect(seen.headers['content-digest']).toBeUndefined();
    }
  });

  it('carries the key in the header the server reads', async () => {
    const { network, handle, engine, server } = world({ idempotencyHeader: 'X-Request-Id' });
    network.failures = ['network'];
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    await engine.flush({ force: true });
    const key = network.seen[0]!.headers['x-request-id'];
    expect(key).toMatch(/^"requests-/);
    expect(server.seen.at(-1)!.headers['x-request-id']).toBe(key);
    expect(server.seen.at(-1)!.headers['idempotency-key']).toBeUndefined();
  });

  it('leaves a request without an owner to the network', async () => {
    const { network, handle, rows } = world({ owner: () => undefined });
    network.failures = ['network'];
    await expect(handle(write('/api/notes', { title: 'x' }))).rejects.toThrow();
    expect(network.seen[0]!.headers['idempotency-key']).toBeUndefined();
    expect(await rows()).toEqual([]);
  });
});

/**
 * Holds the strategy's first fetch on the wire until the test lets it fail (a network error) or
 * succeed; later fetches go straight to the fake server.
 */
function holdFirstFetch(network: FakeServer) {
  const fetchOf = network.fetch;
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  let release!: (outcome: 'fail' | 'succeed') => void;
  const decided = new Promise<'fail' | 'succeed'>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
    calls++;
    if (calls > 1) return fetchOf(input, init);
    const request = new Request(input, init);
    arrived();
    if ((await decided) === 'fail') {
      network.seen.push({ method: request.method, url: request.url, headers: {}, body: null });
      throw new TypeError('Failed to fetch');
    }
    return fetchOf(request);
  });
  return {
    reached,
    /** How many requests went on the wire, the held one included. */
    calls: () => calls,
    fail: () => release('fail'),
    succeed: () => release('succeed'),
  };
}

/** Everything the outbox's IndexedDB database holds, as text (rows, meta, receipts). */
async function storedText(): Promise<string> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const request = indexedDB.open('sw-outbox');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    const all = await Promise.all(
      [...db.objectStoreNames].map(
        (name) =>
          new Promise<unknown[]>((resolve, reject) => {
            const request = db.transaction(name).objectStore(name).getAll();
            request.onsuccess = () => resolve(request.result);
            request.onerror = () => reject(request.error);
          }),
      ),
    );
    return JSON.stringify(all);
  } finally {
    db.close();
  }
}
