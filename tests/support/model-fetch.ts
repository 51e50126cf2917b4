import type { TransportResult } from '../../shared/model/ports.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import { createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { formatBatchLink } from '../../shared/wire/batch.ts';
import type { TestClock } from './clock.ts';
import { LEASE, OWNER } from './harness.ts';
import type { ModelServer } from './model-server.ts';

const NOT_FOUND: TransportResult = {
  kind: 'response',
  status: 404,
  headers: { 'content-type': 'application/problem+json' },
  body: '{"type":"not-found"}',
};
const BATCH_LIMITS = { maxItems: 100, maxBytes: 1024 * 1024 };

/** One request as it reached the wire: by whom, when (by the test clock), with which key. */
export interface WireRecord {
  at: number;
  key: string;
  method: string;
  url: string;
}

/**
 * A `fetch` onto the model server, for tests of the real fetch transport: the principal is the
 * bearer token, every request that reaches the wire is recorded with the clock's time, and
 * `hold` keeps requests on the wire until their signal aborts or `release` lets them through.
 * `POST <server.batchPath>` is the batch endpoint (SPEC §15.1); other paths than `/api/…` are 404.
 */
export function modelFetch(server: ModelServer, clock: TestClock) {
  const wire: WireRecord[] = [];
  const held: (() => void)[] = [];
  let holding = false;
  const fetch = (async (input: string, init: RequestInit = {}) => {
    const url = new URL(input);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name.toLowerCase()] = value;
    });
    const owner = (headers.authorization ?? '').replace(/^Bearer /, '');
    const request: RowRequest = {
      requestId: '',
      fingerprint: '',
      method: init.method ?? 'GET',
      url: url.pathname,
      headers,
      body: typeof init.body === 'string' ? init.body : null,
    };
    wire.push({
      at: clock.now(),
      key: (headers['idempotency-key'] ?? '').replaceAll('"', ''),
      method: request.method,
      url: request.url,
    });
    if (holding) {
      await new Promise<void>((go, fail) => {
        held.push(go);
        init.signal?.addEventListener('abort', () =>
          fail(new DOMException('The operation was aborted.', 'AbortError')),
        );
      });
    }
    const result =
      request.url === server.batchPath
        ? server.handleBatch(request.body ?? '', owner)
        : request.url.startsWith('/api/')
          ? server.handle(request, owner)
          : NOT_FOUND;
    if (result.kind !== 'response') throw new TypeError('Failed to fetch');
    const response = new Response(result.body, { status: result.status, headers: result.headers });
    // The reference server advertises its batch endpoint on every answer (SPEC §15.1).
    if (server.advertiseBatches && server.batchPath !== undefined)
      response.headers.set('link', formatBatchLink(server.batchPath, BATCH_LIMITS));
    return response;
  }) as typeof globalThis.fetch;
  return {
    fetch,
    wire,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const go of held.splice(0)) go();
    },
  };
}

/** The page's origin in tests that send through the real fetch transport. */
export const TEST_ORIGIN = 'https://app.test';

/**
 * The real fetch transport over {@link modelFetch}, as a worker of `owner` at {@link TEST_ORIGIN}
 * would have it: `net` shows what went on the wire.
 */
export function modelFetchTransport(server: ModelServer, clock: TestClock, owner = OWNER) {
  const net = modelFetch(server, clock);
  const transport = createFetchTransport({
    auth: async () => ({ authorization: `Bearer ${owner}` }),
    allowedOrigins: [TEST_ORIGIN],
    baseUrl: `${TEST_ORIGIN}/sw.js`,
    timeoutMs: LEASE,
    clock,
    fetch: net.fetch,
  });
  return { net, transport };
}
