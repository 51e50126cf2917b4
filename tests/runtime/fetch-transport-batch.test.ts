import { describe, expect, it } from 'vitest';
import type { BatchRoute, SendDeadline, TransportResult } from '../../shared/model/ports.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import { createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { type BatchItem, formatBatchLink } from '../../shared/wire/batch.ts';

/** SPEC §15.1, the client half: the fetch transport's book of batch endpoints and its sends. */

const NOW = 1_000_000;
const clock = { now: () => NOW };
const deadline: SendDeadline = { leaveBy: NOW + 8000, abortAt: NOW + 10_000 };
const ctx = { owner: 'alice', collection: 'notes' };
const LINK = formatBatchLink('/sync/batch', { maxItems: 100, maxBytes: 1024 * 1024 });

const note = (n: number, over: Partial<RowRequest> = {}): RowRequest => ({
  requestId: `notes-${String(n).padStart(24, '0')}`,
  fingerprint: 'f',
  method: 'POST',
  url: '/api/notes',
  headers: { 'content-type': 'application/json', 'content-digest': `sha-256=:${n}:` },
  body: `{"title":"n${n}"}`,
  ...over,
});

interface Seen {
  url: string;
  headers: Headers;
  body: string | null;
  items?: BatchItem[];
}

/**
 * A fetch onto a small server: writes answer 201 with an ETag, batches answer per item (or as
 * `batch` says), and every answer carries `link` when set.
 */
function server(
  options: { link?: string; batch?: (items: BatchItem[]) => Response | undefined } = {},
) {
  const seen: Seen[] = [];
  const withLink = (response: Response) => {
    if (options.link) response.headers.set('link', options.link);
    return response;
  };
  const fetch = (async (url: string, init: RequestInit) => {
    const body = typeof init.body === 'string' ? init.body : null;
    const entry: Seen = { url, headers: new Headers(init.headers), body };
    seen.push(entry);
    if (url.endsWith('/sync/batch')) {
      const items = (JSON.parse(body!) as { items: BatchItem[] }).items;
      entry.items = items;
      const answer = options.batch?.(items);
      if (answer) return withLink(answer);
      return withLink(
        new Response(
          JSON.stringify({
            items: items.map((item, i) => ({
              status: 201,
              headers: {
                'content-type': 'application/json',
                etag: '"1"',
                ...(i === 0 ? { 'idempotent-replayed': 'true' } : {}),
              },
              body: JSON.stringify({
                id: `n${i}`,
                revision: 1,
                key: item.headers['idempotency-key'],
              }),
            })),
          }),
          { status: 200, headers: { 'content-type': 'application/json' } },
        ),
      );
    }
    return withLink(
      new Response('{"id":"n1","revision":1}', { status: 201, headers: { etag: '"1"' } }),
    );
  }) as typeof globalThis.fetch;
  const transport = createFetchTransport({
    auth: async () => ({ authorization: 'Bearer t' }),
    allowedOrigins: ['https://app.example', 'https://api.example'],
    baseUrl: 'https://app.example/sw.js',
    timeoutMs: 5000,
    clock,
    fetch,
  });
  return { transport, seen, batches: () => seen.filter((s) => s.items !== undefined) };
}

/** The results of a batch that the endpoint took. */
function taken(results: TransportResult[] | 'unsupported'): TransportResult[] {
  if (results === 'unsupported') throw new Error('the batch was not taken');
  return results;
}

const routeOf = (t: ReturnType<typeof server>['transport'], request = note(0), url?: string) =>
  t.batchRoute!(request, { owner: 'alice', ...(url === undefined ? {} : { url }) });

/** The route a request travels by, which must be known. */
function routeTo(t: ReturnType<typeof server>['transport'], request = note(0), url?: string) {
  const route = routeOf(t, request, url);
  if (route === undefined || route === 'unknown') throw new Error(`no route: ${route}`);
  return route;
}

describe('the fetch transport’s batches (SPEC §15.1)', () => {
  it('learns the endpoint from the Link on an answer it already got, and sends the rows there as one request with the exact bytes and keys', async () => {
    const { transport, seen, batches } = server({ link: LINK });
    expect(routeOf(transport)).toBe('unknown');
    await transport.send(note(0), ctx);
    const route = routeTo(transport);
    expect(route).toEqual({
      url: 'https://app.example/sync/batch',
      maxRows: 50,
      maxBytes: 256 * 1024,
    });
    const requests = [note(1), note(2), note(3, { method: 'PATCH', url: '/api/notes/n9?x=1' })];
    const results = await transport.sendBatch!(route, requests, { owner: 'alice', deadline });
    expect(seen).toHaveLength(2);
    const [batch] = batches();
    expect(batch!.url).toBe('https://app.example/sync/batch');
    expect(batch!.headers.get('authorization')).toBe('Bearer t');
    expect(batch!.headers.get('content-type')).toBe('application/json');
    expect(batch!.items).toEqual(
      requests.map((r) => ({
        method: r.method,
        path: r.url,
        headers: { ...r.headers, 'idempotency-key': `"${r.requestId}"` },
        body: r.body,
      })),
    );
    // Each item's answer is what its request alone would have got.
    expect(results).toEqual(
      requests.map((r, i) => ({
        kind: 'response',
        status: 201,
        headers: {
          'content-type': 'application/json',
          etag: '"1"',
          ...(i === 0 ? { 'idempotent-replayed': 'true' } : {}),
        },
        body: JSON.stringify({ id: `n${i}`, revision: 1, key: `"${r.requestId}"` }),
      })),
    );
  });

  it('says a route is unknown until the request’s origin has answered, with or without a Link, unless an endpoint is configured', async () => {
    const other = note(1, { url: 'https://api.example/api/notes' });
    const { transport } = server();
    expect(routeOf(transport)).toBe('unknown');
    expect(routeTo(transport, note(0), '/sync/batch').url).toBe('https://app.example/sync/batch');
    // A row with a key header of its own never travels in a batch: nothing to learn for it.
    expect(routeOf(transport, note(0, { keyHeader: 'x-request-id' }))).toBeUndefined();
    // An origin no request may go to has no route to learn either.
    expect(routeOf(transport, note(0, { url: 'https://elsewhere.example/n' }))).toBeUndefined();
    await transport.send(note(0), ctx);
    expect(routeOf(transport)).toBeUndefined();
    // Each origin answers for itself.
    expect(routeOf(transport, other)).toBe('unknown');
    const learned = server({ link: LINK });
    await learned.transport.send(note(0), ctx);
    expect(routeTo(learned.transport).url).toBe('https://app.example/sync/batch');
  });

  it('takes the limits the server advertises when they are tighter, and sends what does not fit in the next batch', async () => {
    const link = formatBatchLink('/sync/batch', { maxItems: 2, maxBytes: 1024 * 1024 });
    const { transport, batches } = server({ link });
    await transport.send(note(0), ctx);
    const route = routeTo(transport);
    expect(route.maxRows).toBe(2);
    const results = await transport.sendBatch!(route, [note(1), note(2), note(3), note(4)], {
      owner: 'alice',
      deadline,
    });
    expect(batches().map((b) => b.items!.length)).toEqual([2, 2]);
    expect(results).toHaveLength(4);
  });

  it('ignores an endpoint advertised on another origin: item paths only address the endpoint’s own', async () => {
    const { transport } = server({
      link: '<https://api.example/sync/batch>; rel="urn:sw-outbox:batch"',
    });
    await transport.send(note(0), ctx);
    expect(routeOf(transport)).toBeUndefined();
    // A configured endpoint on another origin than the request is no route either.
    expect(routeOf(transport, note(1), 'https://api.example/sync/batch')).toBeUndefined();
  });

  it('remembers a 404 from a configured endpoint for the origin: nothing ran, and every later row goes alone', async () => {
    const { transport, batches } = server({
      batch: () => new Response('{"type":"not-found"}', { status: 404 }),
    });
    const route = routeTo(transport, note(0), '/sync/batch');
    expect(route.url).toBe('https://app.example/sync/batch');
    expect(
      await transport.sendBatch!(route, [note(1), note(2)], { owner: 'alice', deadline }),
    ).toBe('unsupported');
    expect(routeOf(transport, note(3), '/sync/batch')).toBeUndefined();
    expect(routeOf(transport, note(3, { url: '/api/other' }))).toBeUndefined();
    expect(batches()).toHaveLength(1);
  });

  it('halves the rows per batch after a 413 and sends the halves, keeping the smaller size for the endpoint', async () => {
    let refusals = 1;
    const { transport, batches } = server({
      link: LINK,
      batch: (items) =>
        items.length > 2 && refusals-- > 0
          ? new Response('{"type":"body-too-large"}', { status: 413 })
          : undefined,
    });
    await transport.send(note(0), ctx);
    const route = routeTo(transport);
    const results = await transport.sendBatch!(route, [note(1), note(2), note(3), note(4)], {
      owner: 'alice',
      deadline,
    });
    expect(batches().map((b) => b.items!.length)).toEqual([4, 2, 2]);
    expect(taken(results).map((r) => (r.kind === 'response' ? r.status : r.kind))).toEqual([
      201, 201, 201, 201,
    ]);
    expect(routeTo(transport).maxRows).toBe(2);
  });

  it('treats a 2xx that is no answer for the items as a lost answer for each of them', async () => {
    const { transport } = server({
      link: LINK,
      batch: () => new Response('{"items":[]}', { status: 200 }),
    });
    await transport.send(note(0), ctx);
    const results = await transport.sendBatch!(routeTo(transport), [note(1), note(2)], {
      owner: 'alice',
      deadline,
    });
    expect(results).toEqual([
      { kind: 'network_error', message: 'batch answer: 0 answers for 2 items' },
      { kind: 'network_error', message: 'batch answer: 0 answers for 2 items' },
    ]);
  });

  it('gives a batch-level answer (401, 503) to every item, as if each request had got it', async () => {
    const { transport } = server({
      link: LINK,
      batch: () =>
        new Response('{"type":"unauthorized"}', {
          status: 401,
          headers: { 'www-authenticate': 'Bearer' },
        }),
    });
    await transport.send(note(0), ctx);
    const results = await transport.sendBatch!(routeTo(transport), [note(1), note(2)], {
      owner: 'alice',
      deadline,
    });
    expect(taken(results).map((r) => r.kind === 'response' && r.status)).toEqual([401, 401]);
  });

  it('sends a row larger than a batch may carry alone, and the others together', async () => {
    const { transport, seen, batches } = server({ link: LINK });
    await transport.send(note(0), ctx);
    const route: BatchRoute = { ...routeTo(transport), maxBytes: 2000 };
    const big = note(2, { body: JSON.stringify({ title: 'x'.repeat(3000) }) });
    const results = await transport.sendBatch!(route, [note(1), big, note(3), note(4)], {
      owner: 'alice',
      deadline,
    });
    expect(results).toHaveLength(4);
    expect(batches().map((b) => b.items!.map((i) => i.body))).toEqual([
      [note(3).body, note(4).body],
    ]);
    // note 1 could not share a batch with the big row after it: it went alone too.
    expect(seen.filter((s) => s.items === undefined).map((s) => s.body)).toEqual([
      note(0).body,
      note(1).body,
      big.body,
    ]);
  });

  it('sends each row alone when the server refuses the envelope, without forgetting the endpoint', async () => {
    const { transport } = server({
      link: LINK,
      batch: () => new Response('{"type":"batch-malformed"}', { status: 400 }),
    });
    await transport.send(note(0), ctx);
    expect(
      await transport.sendBatch!(routeTo(transport), [note(1), note(2)], {
        owner: 'alice',
        deadline,
      }),
    ).toBe('unsupported');
    expect(routeTo(transport).url).toBe('https://app.example/sync/batch');
  });

  it('sends nothing once the claims’ deadline has passed (SPEC §4)', async () => {
    const { transport, seen } = server({ link: LINK });
    await transport.send(note(0), ctx);
    const late: SendDeadline = { leaveBy: NOW, abortAt: NOW + 2000 };
    const results = await transport.sendBatch!(routeTo(transport), [note(1), note(2)], {
      owner: 'alice',
      deadline: late,
    });
    expect(taken(results).map((r) => r.kind)).toEqual(['not_sent', 'not_sent']);
    expect(seen).toHaveLength(1);
  });

  it('sends rows with a key header of their own alone: the batch protocol carries Idempotency-Key', async () => {
    const { transport } = server({ link: LINK });
    await transport.send(note(0), ctx);
    expect(routeOf(transport, note(1, { keyHeader: null }))).toBeUndefined();
    expect(routeOf(transport, note(1, { keyHeader: 'x-request-id' }))).toBeUndefined();
  });
});
