import { describe, expect, it } from 'vitest';
import type { RowRequest } from '../../shared/model/row.ts';
import { buildRowRequest } from '../../shared/plan/identity.ts';
import {
  BATCH_LINK_REL,
  BATCH_MIN_LIMITS,
  type BatchAnswer,
  batchPath,
  decodeBatchAnswer,
  encodeBatch,
  formatBatchLink,
  parseBatchLink,
  readBatchRequest,
  toBatchItem,
} from '../../shared/wire/batch.ts';

const ENDPOINT = 'https://app.example/sync/batch';
/** The transport's base: the worker's location. */
const WORKER = 'https://app.example/app/sw.js';

function row(id: string, overrides: Partial<RowRequest> = {}): RowRequest {
  return {
    ...buildRowRequest(
      {
        method: 'POST',
        url: '/api/notes',
        headers: { 'content-type': 'application/json' },
        body: `{"title":"${id}"}`,
      },
      `notes-${id.padEnd(24, '0')}`,
      null,
    ),
    ...overrides,
  };
}

/** SPEC §15.1: an item is exactly the request its row would have sent alone. */
describe('toBatchItem and batchPath', () => {
  const cases: Array<{ name: string; url: string; path: string | undefined }> = [
    { name: 'a relative path stays as it is', url: '/api/notes', path: '/api/notes' },
    {
      name: 'a relative path resolves against the base, as the transport resolves it',
      url: 'notes/n1',
      path: '/app/notes/n1',
    },
    { name: 'the query is kept', url: '/api/notes?x=1', path: '/api/notes?x=1' },
    {
      name: 'an absolute URL on the origin becomes its path',
      url: 'https://app.example/api/notes/a%20b',
      path: '/api/notes/a%20b',
    },
    {
      name: 'another origin cannot be batched',
      url: 'https://other.example/api/notes',
      path: undefined,
    },
    {
      name: 'another port is another origin',
      url: 'https://app.example:8443/api/notes',
      path: undefined,
    },
    { name: 'no URL at all cannot be batched', url: 'http://[', path: undefined },
  ];
  it.each(cases)('$name', ({ url, path }) => {
    expect(batchPath(url, ENDPOINT, WORKER)).toBe(path);
  });

  it('resolves relative URLs against the endpoint when no base is given', () => {
    expect(batchPath('notes/n1', ENDPOINT)).toBe('/sync/notes/n1');
  });

  it('carries method, stored headers, the key and the exact body text', () => {
    const request = row('a');
    expect(toBatchItem(request, ENDPOINT)).toEqual({
      method: 'POST',
      path: '/api/notes',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': `"${request.requestId}"`,
        'content-digest': request.headers['content-digest'],
      },
      body: '{"title":"a"}',
    });
  });

  it('carries the method as fetch sends it: the six it normalizes upper-cased, any other as given', () => {
    const item = (method: string) => toBatchItem({ ...row('a'), method }, ENDPOINT).method;
    expect(['post', 'Put', 'delete', 'get', 'head', 'options'].map(item)).toEqual([
      'POST',
      'PUT',
      'DELETE',
      'GET',
      'HEAD',
      'OPTIONS',
    ]);
    expect(['patch', 'PATCH', 'Purge'].map(item)).toEqual(['patch', 'PATCH', 'Purge']);
  });

  it('adds the idempotency key the transport would add, and lower-cases header names', () => {
    const item = toBatchItem(
      {
        requestId: 'notes-000000000000000000000001',
        fingerprint: 'f',
        method: 'DELETE',
        url: '/api/notes/n1',
        headers: { 'If-Match': '"3"' },
        body: null,
      },
      ENDPOINT,
    );
    expect(item).toEqual({
      method: 'DELETE',
      path: '/api/notes/n1',
      headers: { 'if-match': '"3"', 'idempotency-key': '"notes-000000000000000000000001"' },
      body: null,
    });
  });

  it('sends a lone surrogate as U+FFFD, the bytes fetch would send and the stored digest covers', () => {
    const item = toBatchItem(row('s', { body: '{"title":"x\udfffy\ud83d\ude00"}' }), ENDPOINT);
    expect(item.body).toBe('{"title":"x\ufffdy\ud83d\ude00"}');
  });

  it('refuses a request on another origin: the caller picks rows with batchPath', () => {
    expect(() =>
      toBatchItem(row('x', { url: 'https://other.example/api/notes' }), ENDPOINT),
    ).toThrow(TypeError);
  });
});

describe('encodeBatch', () => {
  it('encodes every request when they fit, as { items } in order', () => {
    const requests = [row('a'), row('b'), row('c')];
    const batch = encodeBatch(requests, { endpoint: ENDPOINT });
    expect(batch.count).toBe(3);
    expect(JSON.parse(batch.body)).toEqual({
      items: requests.map((request) => toBatchItem(request, ENDPOINT)),
    });
    expect(batch.bytes).toBe(Buffer.byteLength(batch.body));
  });

  it('takes the longest prefix within maxItems', () => {
    const batch = encodeBatch([row('a'), row('b'), row('c')], { endpoint: ENDPOINT, maxItems: 2 });
    expect(batch.count).toBe(2);
    expect(JSON.parse(batch.body).items).toHaveLength(2);
  });

  it('takes the longest prefix within maxBytes, counting the whole body in UTF-8', () => {
    const requests = [row('a', { body: '{"title":"é"}' }), row('b'), row('c')];
    const two = encodeBatch(requests.slice(0, 2), { endpoint: ENDPOINT });
    const batch = encodeBatch(requests, { endpoint: ENDPOINT, maxBytes: two.bytes });
    expect(batch).toEqual(two);
    expect(encodeBatch(requests, { endpoint: ENDPOINT, maxBytes: two.bytes - 1 }).count).toBe(1);
  });

  it('carries nothing when the first request alone is too large: send it alone', () => {
    const batch = encodeBatch([row('a')], { endpoint: ENDPOINT, maxBytes: 50 });
    expect(batch).toEqual({ body: '{"items":[]}', bytes: 12, count: 0 });
  });

  it('defaults to the limits every batch endpoint accepts', () => {
    const many = Array.from({ length: 60 }, (_, i) => row(`r${i}`));
    expect(encodeBatch(many, { endpoint: ENDPOINT }).count).toBe(BATCH_MIN_LIMITS.maxItems);
  });
});

const json = (value: unknown) => JSON.stringify(value);
const created = json({ id: 'note-1', revision: 1, title: 'a', body: '' });
const conflict = json({ type: 'revision-conflict', title: 't', status: 412, currentRevision: 2 });

/** SPEC §15.1: one answer per item, or one for the whole batch. */
describe('decodeBatchAnswer', () => {
  const item = (status: number, headers: Record<string, string>, body: string) => ({
    status,
    headers,
    body,
  });
  const cases: Array<{
    name: string;
    status: number;
    body: string;
    count: number;
    answer: BatchAnswer;
  }> = [
    {
      name: 'a 200 answers each item in order, shaped like a single transport result',
      status: 200,
      count: 2,
      body: json({
        items: [
          item(201, { 'content-type': 'application/json', etag: '"1"' }, created),
          item(412, { 'Content-Type': 'application/problem+json', ETag: '"2"' }, conflict),
        ],
      }),
      answer: {
        kind: 'items',
        results: [
          {
            kind: 'response',
            status: 201,
            headers: { 'content-type': 'application/json', etag: '"1"' },
            body: created,
          },
          {
            kind: 'response',
            status: 412,
            headers: { 'content-type': 'application/problem+json', etag: '"2"' },
            body: conflict,
          },
        ],
      },
    },
    {
      name: 'a replay keeps Idempotent-Replayed and the exact body bytes',
      status: 200,
      count: 1,
      body: json({ items: [item(201, { 'idempotent-replayed': 'true' }, ' {"id" : 1} ')] }),
      answer: {
        kind: 'items',
        results: [
          {
            kind: 'response',
            status: 201,
            headers: { 'idempotent-replayed': 'true' },
            body: ' {"id" : 1} ',
          },
        ],
      },
    },
    ...[404, 405, 501].map((status) => ({
      name: `${status} means no batches here`,
      status,
      count: 3,
      body: '',
      answer: { kind: 'unsupported', status } as BatchAnswer,
    })),
    ...[401, 408, 429, 500, 502, 503, 504].map((status) => ({
      name: `${status} applies to every item`,
      status,
      count: 3,
      body: '{"type":"x"}',
      answer: {
        kind: 'all',
        result: { kind: 'response', status, headers: { 'retry-after': '1' }, body: '{"type":"x"}' },
      } as BatchAnswer,
    })),
    {
      name: '413: the batch is too large, nothing ran',
      status: 413,
      count: 3,
      body: '{}',
      answer: {
        kind: 'too_large',
        result: { kind: 'response', status: 413, headers: { 'retry-after': '1' }, body: '{}' },
      },
    },
    ...[400, 403, 415, 422, 431, 302].map((status) => ({
      name: `${status} refuses the envelope: send the rows one by one`,
      status,
      count: 1,
      body: '{}',
      answer: {
        kind: 'refused',
        result: { kind: 'response', status, headers: { 'retry-after': '1' }, body: '{}' },
      } as BatchAnswer,
    })),
    ...(
      [
        ['a 204', 204, ''],
        ['a body that is not JSON', 200, '{"items":['],
        ['no items', 200, '{}'],
        ['items that are no array', 200, '{"items":{}}'],
        ['fewer answers than items', 200, json({ items: [item(201, {}, '{}')] })],
        ['more answers than items', 200, json({ items: [1, 2, 3] })],
        [
          'an answer without a status',
          200,
          json({ items: [{ headers: {}, body: '' }, item(201, {}, '')] }),
        ],
        ['a status out of range', 200, json({ items: [item(99, {}, ''), item(201, {}, '')] })],
        [
          'a body that is a value, not text',
          200,
          json({ items: [item(201, {}, ''), { status: 201, headers: {}, body: {} }] }),
        ],
        [
          'a header that is not a string',
          200,
          json({ items: [item(201, { etag: 1 } as never, ''), item(201, {}, '')] }),
        ],
      ] as const
    ).map(([name, status, body]) => ({
      name: `${name} is malformed: the items may have run, resend them with the same keys`,
      status,
      count: 2,
      body,
      answer: { kind: 'malformed', message: expect.any(String) } as BatchAnswer,
    })),
  ];
  it.each(cases)('$name', ({ status, body, count, answer }) => {
    const headers: Record<string, string> = status === 200 ? {} : { 'retry-after': '1' };
    expect(decodeBatchAnswer(status, headers, body, count)).toEqual(answer);
  });
});

describe('readBatchRequest (the envelope a server reads)', () => {
  const good = { method: 'POST', path: '/api/notes', headers: {}, body: null };
  const cases: Array<[string, unknown, string | undefined]> = [
    ['an empty batch', { items: [] }, undefined],
    ['a batch with unknown members, ignored', { items: [{ ...good, extra: 1 }], v: 2 }, undefined],
    ['not an object', [good], 'the body must be'],
    ['no items', {}, 'the body must be'],
    ['items that are no array', { items: good }, 'the body must be'],
    ['an item that is no object', { items: [good, 'x'] }, 'items[1]: an item is an object'],
    ['a method that is no string', { items: [{ ...good, method: 1 }] }, 'items[0]: method'],
    ['no path', { items: [{ ...good, path: undefined }] }, 'items[0]: path'],
    ['headers that are no object', { items: [{ ...good, headers: [] }] }, 'items[0]: headers'],
    [
      'a header value that is no string',
      { items: [{ ...good, headers: { 'if-match': 1 } }] },
      'must be a string',
    ],
    [
      'a header twice in two cases',
      { items: [{ ...good, headers: { 'If-Match': '"1"', 'if-match': '"2"' } }] },
      'appears twice',
    ],
    ['a body that is a value', { items: [{ ...good, body: { title: 'x' } }] }, 'items[0]: body'],
    ['no body member', { items: [{ method: 'POST', path: '/', headers: {} }] }, 'items[0]: body'],
  ];
  it.each(cases)('%s', (_name, value, problem) => {
    const read = readBatchRequest(value);
    if (problem === undefined) expect(read.ok).toBe(true);
    else expect(read).toEqual({ ok: false, detail: expect.stringContaining(problem) });
  });

  it('lower-cases header names', () => {
    const read = readBatchRequest({ items: [{ ...good, headers: { 'Idempotency-Key': '"k"' } }] });
    expect(read).toEqual({ ok: true, items: [{ ...good, headers: { 'idempotency-key': '"k"' } }] });
  });
});

describe('the batch Link (discovery)', () => {
  it('round-trips the endpoint and its limits, resolved against the response URL', () => {
    const link = formatBatchLink('/sync/batch', { maxItems: 100, maxBytes: 1_048_576 });
    expect(link).toBe(`</sync/batch>; rel="${BATCH_LINK_REL}"; max-items=100; max-bytes=1048576`);
    expect(parseBatchLink(link, 'http://127.0.0.1:8080/api/notes')).toEqual({
      url: 'http://127.0.0.1:8080/sync/batch',
      maxItems: 100,
      maxBytes: 1_048_576,
    });
  });

  const cases: Array<[string, string | undefined, unknown]> = [
    ['no Link header', undefined, undefined],
    ['other relations only', '</next>; rel="next", </x>; rel=prev', undefined],
    [
      'the batch among other links, the relation in a list',
      `</a>; rel="next"; title="a, b; c", <https://api.example/b>; rel="alternate ${BATCH_LINK_REL}"`,
      { url: 'https://api.example/b' },
    ],
    [
      'an unquoted relation',
      `</b>; rel=${BATCH_LINK_REL}; max-items=7`,
      { url: 'http://h/b', maxItems: 7 },
    ],
    [
      'limits that are not positive integers are ignored',
      `</b>; rel="${BATCH_LINK_REL}"; max-items=0; max-bytes=1e3`,
      { url: 'http://h/b' },
    ],
  ];
  it.each(cases)('%s', (_name, value, endpoint) => {
    expect(parseBatchLink(value, 'http://h/api')).toEqual(endpoint);
  });
});
