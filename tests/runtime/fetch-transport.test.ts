import { describe, expect, it } from 'vitest';
import type { RowRequest } from '../../shared/model/row.ts';
import {
  createFetchTransport,
  type FetchTransportOptions,
} from '../../shared/runtime/fetch-transport.ts';
import { fixedClock } from '../support/clock.ts';

const request = (over: Partial<RowRequest> = {}): RowRequest => ({
  requestId: 'notes-0123456789abcdef01234567',
  fingerprint: 'f',
  method: 'POST',
  url: '/api/notes',
  headers: { 'content-type': 'application/json' },
  body: '{"title":"x"}',
  ...over,
});
const ctx = { owner: 'alice', collection: 'notes' };

function transport(
  over: Partial<FetchTransportOptions> & {
    respond?: (url: string, init: RequestInit) => Promise<Response>;
  },
) {
  const seen: Array<{ url: string; init: RequestInit }> = [];
  const respond =
    over.respond ?? (async () => new Response('{}', { status: 201, headers: { ETag: '"1"' } }));
  const t = createFetchTransport({
    auth: async () => ({ authorization: 'Bearer t' }),
    allowedOrigins: ['https://app.example'],
    baseUrl: 'https://app.example/sw.js',
    timeoutMs: 1000,
    fetch: (async (url: string, init: RequestInit) => {
      seen.push({ url, init });
      return respond(url, init);
    }) as typeof fetch,
    ...over,
  });
  return { t, seen };
}

describe('the fetch transport (SPEC §14)', () => {
  it('sends the stored bytes with credentials added at send time and answers with lower-cased headers', async () => {
    const { t, seen } = transport({});
    const stored = request();
    const result = await t.send(stored, ctx);
    expect(result).toEqual({
      kind: 'response',
      status: 201,
      headers: { 'content-type': 'text/plain;charset=UTF-8', etag: '"1"' },
      body: '{}',
    });
    const headers = new Headers(seen[0]!.init.headers);
    expect(seen[0]!.url).toBe('https://app.example/api/notes');
    expect(seen[0]!.init.body).toBe(stored.body);
    expect(headers.get('authorization')).toBe('Bearer t');
    expect(headers.get('idempotency-key')).toBe(`"${stored.requestId}"`);
    // The row's request is never changed: credentials are not stored (§2).
    expect(stored.headers).toEqual({ 'content-type': 'application/json' });
  });

  it('keeps an Idempotency-Key already in the stored headers', async () => {
    const { t, seen } = transport({});
    await t.send(request({ headers: { 'idempotency-key': 'legacy-key-000001' } }), ctx);
    expect(new Headers(seen[0]!.init.headers).get('idempotency-key')).toBe('legacy-key-000001');
  });

  it('refuses a URL outside allowedOrigins without sending it', async () => {
    const { t, seen } = transport({});
    const result = await t.send(request({ url: 'https://evil.example/api/notes' }), ctx);
    expect(result).toMatchObject({ kind: 'refused', code: 'origin_not_allowed' });
    expect(seen).toHaveLength(0);
  });

  it('reports missing credentials instead of sending anonymously', async () => {
    const { t, seen } = transport({ auth: async () => null });
    expect(await t.send(request(), ctx)).toEqual({ kind: 'auth_unavailable' });
    expect(seen).toHaveLength(0);
  });

  it('turns an auth hook that throws into a retryable failure, sending nothing', async () => {
    const { t, seen } = transport({
      auth: async () => Promise.reject(new Error('token endpoint unreachable')),
    });
    expect(await t.send(request(), ctx)).toEqual({
      kind: 'network_error',
      message: 'auth(alice) failed: token endpoint unreachable',
    });
    expect(seen).toHaveLength(0);
  });

  it('turns a network failure and an attempt past its timeout into values, never throws', async () => {
    const failing = transport({
      respond: async () => Promise.reject(new TypeError('Failed to fetch')),
    });
    expect(await failing.t.send(request(), ctx)).toEqual({
      kind: 'network_error',
      message: 'Failed to fetch',
    });
    const hanging = transport({
      timeoutMs: 20,
      respond: (_url, init) =>
        new Promise((_, reject) =>
          init.signal?.addEventListener('abort', () =>
            reject(new DOMException('aborted', 'AbortError')),
          ),
        ),
    });
    expect(await hanging.t.send(request(), ctx)).toEqual({ kind: 'timeout' });
  });

  it('looks up a receipt at the origin of the request it is about', async () => {
    const { t, seen } = transport({
      respond: async (url) =>
        url.endsWith('/idempotency/known-000000000001')
          ? new Response(JSON.stringify({ status: 201, body: { id: 'n1', revision: 1 } }))
          : new Response('{}', { status: 404 }),
    });
    const at = { ...ctx, url: '/api/notes' };
    expect(await t.lookupReceipt('known-000000000001', at)).toEqual({
      kind: 'found',
      status: 201,
      body: { id: 'n1', revision: 1 },
    });
    expect(await t.lookupReceipt('unknown-00000000001', at)).toEqual({ kind: 'not_found' });
    expect(seen[0]!.url).toBe('https://app.example/idempotency/known-000000000001');
    expect(new Headers(seen[0]!.init.headers).get('authorization')).toBe('Bearer t');
  });

  it('treats a failed lookup as an error, not as "not found"', async () => {
    const { t } = transport({ respond: async () => new Response('busy', { status: 503 }) });
    expect(await t.lookupReceipt('known-000000000001', { ...ctx, url: '/api/notes' })).toEqual({
      kind: 'error',
      message: 'http_503',
    });
  });

  it('reads a record version with the owner’s credentials; 404 is not found, failures are retryable codes (§10.1)', async () => {
    const version = {
      id: 'n1',
      revision: 2,
      value: { title: 'theirs' },
      supersededBy: 'notes-0123456789abcdef01234567',
      supersededAt: 5,
    };
    const { t, seen } = transport({
      respond: async (url) =>
        url.endsWith('/history/2')
          ? new Response(JSON.stringify(version))
          : url.endsWith('/history/9')
            ? new Response('busy', { status: 503 })
            : new Response('{}', { status: 404 }),
    });
    expect(await t.lookupHistory!('/api/notes/n1/history/2', ctx)).toEqual({
      kind: 'found',
      version: {
        revision: 2,
        value: { title: 'theirs' },
        supersededBy: 'notes-0123456789abcdef01234567',
        supersededAt: 5,
      },
    });
    expect(seen[0]!.url).toBe('https://app.example/api/notes/n1/history/2');
    expect(new Headers(seen[0]!.init.headers).get('authorization')).toBe('Bearer t');
    expect(await t.lookupHistory!('/api/notes/n1/history/1', ctx)).toEqual({ kind: 'not_found' });
    expect(await t.lookupHistory!('/api/notes/n1/history/9', ctx)).toMatchObject({
      kind: 'error',
      code: 'network',
    });
    expect(
      await t.lookupHistory!('https://elsewhere.example/api/notes/n1/history/2', ctx),
    ).toMatchObject({ kind: 'error', code: 'origin_not_allowed' });
    const offline = transport({
      respond: async () => {
        throw new TypeError('Failed to fetch');
      },
    });
    expect(await offline.t.lookupHistory!('/api/notes/n1/history/2', ctx)).toMatchObject({
      kind: 'error',
      code: 'network',
    });
    const signedOut = transport({ auth: async () => null });
    expect(await signedOut.t.lookupHistory!('/api/notes/n1/history/2', ctx)).toMatchObject({
      kind: 'error',
      code: 'auth_required',
    });
  });
});

describe('the fetch transport under a claim deadline (SPEC §4, G3)', () => {
  const never = () => new Promise<never>(() => undefined);
  const aborting = (_url: string, init: RequestInit) =>
    new Promise<Response>((_, reject) =>
      init.signal?.addEventListener('abort', () =>
        reject(new DOMException('aborted', 'AbortError')),
      ),
    );

  it('sends nothing, and asks no credentials, when the deadline to leave has already passed', async () => {
    const clock = fixedClock(10_000);
    let asked = 0;
    const { t, seen } = transport({
      clock,
      auth: async () => {
        asked++;
        return { authorization: 'Bearer t' };
      },
    });
    const result = await t.send(request(), {
      ...ctx,
      deadline: { leaveBy: 10_000, abortAt: 12_000 },
    });
    expect(result).toMatchObject({ kind: 'not_sent', code: 'lease_lapsed' });
    expect(asked).toBe(0);
    expect(seen).toHaveLength(0);
  });

  it('sends nothing when the auth hook answers after the deadline to leave, by the holder’s clock', async () => {
    const clock = fixedClock(10_000);
    const { t, seen } = transport({
      clock,
      auth: async () => {
        clock.advance(8_000);
        return { authorization: 'Bearer t' };
      },
    });
    const result = await t.send(request(), {
      ...ctx,
      deadline: { leaveBy: 18_000, abortAt: 20_000 },
    });
    expect(result).toMatchObject({ kind: 'not_sent', code: 'lease_lapsed' });
    expect(seen).toHaveLength(0);
  });

  it('stops waiting for an auth hook that never answers once the deadline to leave comes', async () => {
    const { t, seen } = transport({ auth: never, clock: fixedClock(10_000) });
    const result = await t.send(request(), {
      ...ctx,
      deadline: { leaveBy: 10_020, abortAt: 10_030 },
    });
    expect(result).toMatchObject({ kind: 'not_sent', code: 'lease_lapsed' });
    expect(seen).toHaveLength(0);
  });

  it('aborts a request still running when its claim ends, whatever the attempt timeout says', async () => {
    const { t, seen } = transport({
      timeoutMs: 600_000,
      respond: aborting,
      clock: fixedClock(10_000),
    });
    const result = await t.send(request(), {
      ...ctx,
      deadline: { leaveBy: 10_010, abortAt: 10_030 },
    });
    expect(result).toEqual({ kind: 'timeout' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.init.signal?.aborted).toBe(true);
  });

  it('takes its last look at the record once the auth hook has answered, and sends nothing when another row of it went first (§6.1)', async () => {
    const order: string[] = [];
    const { t, seen } = transport({
      clock: fixedClock(10_000),
      auth: async () => {
        order.push('auth');
        return { authorization: 'Bearer t' };
      },
    });
    const look = (clear: boolean) => async () => {
      order.push('look');
      return clear;
    };
    const deadline = { leaveBy: 18_000, abortAt: 20_000 };
    expect(
      await t.send(request(), { ...ctx, deadline: { ...deadline, clear: look(false) } }),
    ).toMatchObject({ kind: 'not_sent', code: 'record_busy' });
    expect(seen).toHaveLength(0);
    expect(
      await t.send(request(), { ...ctx, deadline: { ...deadline, clear: look(true) } }),
    ).toMatchObject({ kind: 'response', status: 201 });
    expect(seen).toHaveLength(1);
    expect(order).toEqual(['auth', 'look', 'auth', 'look']);
  });

  it('sends as before while the deadline is ahead', async () => {
    const { t, seen } = transport({ clock: fixedClock(10_000) });
    const result = await t.send(request(), {
      ...ctx,
      deadline: { leaveBy: 18_000, abortAt: 20_000 },
    });
    expect(result).toMatchObject({ kind: 'response', status: 201 });
    expect(seen).toHaveLength(1);
  });
});
