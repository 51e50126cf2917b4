import { IDBFactory } from 'fake-indexeddb';
import { QueueStore } from 'workbox-background-sync/lib/QueueStore.js';
import { StorableRequest } from 'workbox-background-sync/lib/StorableRequest.js';
import { createOutboxEngine, type OutboxEngine } from '../../sw/engine.ts';
import { requestsHandler } from '../../sw/workbox/index.ts';

/**
 * A worker's world in Node for the Workbox drop-in (SPEC §22): a fresh fake IndexedDB holding
 * both databases, Workbox's real `QueueStore` writing its queue as `BackgroundSyncPlugin` does,
 * and the real engine over a fake server that records every request and counts effects by key.
 */

/** One request as the fake server saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

/** A fake server: effects by idempotency key (a replay of a key applies nothing). */
export class FakeServer {
  readonly seen: Seen[] = [];
  readonly effects: Seen[] = [];
  readonly #keys = new Set<string>();
  /** Status to answer instead of 201, once per entry (e.g. [503]). */
  failures: Array<number | 'network' | 'drop'> = [];

  readonly fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const text = await request.text();
    const seen = {
      method: request.method,
      url: request.url,
      headers,
      body: text === '' ? null : text,
    };
    this.seen.push(seen);
    const failure = this.failures.shift();
    if (failure === 'network') throw new TypeError('Failed to fetch');
    if (typeof failure === 'number') return new Response(null, { status: failure });
    const key = headers['idempotency-key'];
    const replay = key !== undefined && this.#keys.has(key);
    if (!replay) {
      if (key !== undefined) this.#keys.add(key);
      this.effects.push(seen);
    }
    if (failure === 'drop') throw new TypeError('Failed to fetch');
    return new Response(JSON.stringify({ ok: true, n: this.effects.length }), {
      status: 201,
      headers: {
        'content-type': 'application/json',
        ...(replay ? { 'idempotent-replayed': 'true' } : {}),
      },
    });
  }) as typeof fetch;
}

/** A fresh IndexedDB for both databases. */
export function freshIndexedDb(): IDBFactory {
  const factory = new IDBFactory();
  globalThis.indexedDB = factory;
  return factory;
}

/** Queues requests in Workbox's own store, as `BackgroundSyncPlugin` does on a failed fetch. */
export async function queueInWorkbox(queueName: string, requests: Request[]): Promise<void> {
  const store = new QueueStore(queueName);
  for (const request of requests) {
    const data = await StorableRequest.fromRequest(request.clone());
    await store.pushEntry({ requestData: data.toObject(), timestamp: Date.now() });
  }
}

/** The entries left in a Workbox queue. */
export async function workboxEntries(queueName: string) {
  return new QueueStore(queueName).getAll();
}

/** The engine a worker would build, over the fake server. */
export function engineFor(
  server: FakeServer,
  extra: {
    receipts?: { maxCount: number; maxAgeMs: number };
    backoff?: { baseMs: number; maxMs: number };
    /** The worker's own credentials (`auth` hook); `null` for none. Default `Bearer worker`. */
    auth?: Record<string, string> | null;
  } = {},
): OutboxEngine {
  const { auth = WORKER_AUTH, ...tuning } = extra;
  return createOutboxEngine({
    collections: { requests: requestsHandler() },
    fetch: server.fetch,
    allowedOrigins: ['http://localhost'],
    backoff: { baseMs: 1, maxMs: 1 },
    // Rows made with credentials are never sent without (§13): the worker has its own here.
    ...(auth === null ? {} : { auth: () => auth }),
    ...tuning,
  });
}

/** The credentials the test worker's `auth` hook answers with. */
export const WORKER_AUTH = { authorization: 'Bearer worker' };

/** A write as an app makes it, with a bearer token and a JSON body. */
export function write(path: string, body: unknown, method = 'POST'): Request {
  return new Request(`http://localhost${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: 'Bearer secret', 'x-app': 'v1' },
    body: JSON.stringify(body),
  });
}
