import type { RowRequest } from '../../shared/model/row.ts';
import type { TestClock } from './clock.ts';
import type { ModelServer } from './model-server.ts';

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
    const result = server.handle(request, owner);
    if (result.kind !== 'response') throw new TypeError('Failed to fetch');
    return new Response(result.body, { status: result.status, headers: result.headers });
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
