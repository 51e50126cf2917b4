import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { OutboxPlugin, type OutboxPluginOptions } from '../../sw/workbox/index.ts';
import { engineFor, FakeServer, freshIndexedDb, write } from './support.ts';

/**
 * SPEC §22, `OutboxPlugin` on Workbox's own `NetworkOnly` strategy: every request gets its key
 * before it first leaves, a network error or a transient status makes it a `requests` row under
 * that key, the page gets the configured answer, a URL with waiting rows keeps its order, and no
 * credential is stored.
 */

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

function world(options: Partial<OutboxPluginOptions> = {}) {
  const server = new FakeServer();
  // Backoff longer than a test: a row that failed stays put unless the test flushes.
  const engine = engineFor(server, { backoff: { baseMs: 60_000, maxMs: 60_000 } });
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
    expect(server.seen[0]!.headers.authorization).toBeUndefined();
    expect(server.seen[0]!.headers['content-digest']).toBe(first.headers['content-digest']);
    expect(await rows()).toEqual([]);
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
