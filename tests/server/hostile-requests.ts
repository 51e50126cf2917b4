import { createHash } from 'node:crypto';
import fc from 'fast-check';

/**
 * Generated hostile requests for the server fuzz test (issue 11). A request is data, not bytes:
 * the same request is sent to every adapter, each filling in its own placeholders.
 *
 * Placeholders: `{A}` / `{B}` a note of alice / bob made before the run, `{new}` the note the
 * last successful create made, `{rev:<note>}` that note's current revision as `"<n>"`,
 * `{token:<name>}` a bearer token of the fixture, `{digest}` the `Content-Digest` of the body as
 * sent.
 */
export interface HostileRequest {
  method: string;
  target: string;
  headers: Array<[string, string]>;
  /** Text (encoded as UTF-8, placeholders filled) or raw bytes. */
  body?: string | Uint8Array;
  /** Send the body with `Transfer-Encoding: chunked` instead of `Content-Length`. */
  chunked: boolean;
  /**
   * A batch envelope (SPEC §15.1) as JSON with placeholders, sent instead of `body`; in an item
   * (an object with `headers` and a string `body`), `{digest}` is the digest of that item's body.
   */
  batch?: unknown;
}

/** Tokens the fixture makes for `{token:<name>}`. */
export const TOKEN_NAMES = [
  'alice',
  'bob',
  'mallory',
  'expired',
  'future',
  'nearFuture',
  'otherSecret',
] as const;
export type TokenName = (typeof TOKEN_NAMES)[number];

/** Marks generated path segments; an error answer that contains it echoed the path. */
export const PATH_MARKER = 'zq%3Cscript%3E';
/** What the marker and the long generated segments look like once decoded or echoed. */
export const ECHO_PATTERN = /zq<script>|zq%3Cscript|k{40}|L{40}|d{40}|e{40}/;

const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));

/** Strings of every kind: ASCII, any code point, lone surrogates, NUL, limits of the schema. */
const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: utf16Unit, maxLength: 12 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'a\u0000b',
      '\u0000',
      'x\udfffy',
      '\ud800',
      '\udc00\ud800',
      'pair \ud83d\ude00',
      '\u2028\u2029',
      '\ufeff',
      '\uffff\ufffe',
      '"\\/\b\f\n\r\t',
      '<script>alert(1)</script>',
      "'; DROP TABLE notes; --",
      '%s%n%x',
      '',
      ' ',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 195, max: 205 }).map((n) => 't'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 9_995, max: 10_005 }).map((n) => 'b'.repeat(n)) },
);

const jsonText = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record(
        {
          title: text,
          body: text,
          extra: fc.dictionary(fc.string({ unit: utf16Unit, maxLength: 6 }), fc.jsonValue(), {
            maxKeys: 2,
          }),
        },
        { requiredKeys: [] },
      )
      .map(({ extra, ...fields }) => JSON.stringify({ ...extra, ...fields })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ user: fc.oneof(fc.constantFrom('alice', 'bob', 'a\u0000b', ''), text) })
      .map((value) => JSON.stringify(value)),
  },
  {
    weight: 1,
    arbitrary: fc
      .record(
        {
          user: fc.constantFrom('alice', 'bob', 'nobody', 'a\u0000'),
          id: fc.constantFrom('{A}', '{B}', '{new}', 'missing', 'a\u0000b', 'x'.repeat(81)),
          title: text,
          body: text,
        },
        { requiredKeys: ['user', 'id'] },
      )
      .map((value) => JSON.stringify(value)),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        title: fc.oneof(
          fc.integer(),
          fc.double(),
          fc.boolean(),
          fc.constant(null),
          fc.array(fc.string(), { maxLength: 3 }),
          fc.object({ maxDepth: 2 }),
        ),
      })
      .map((value) => JSON.stringify(value)),
  },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
);

const malformedBody = fc.oneof(
  jsonText.chain((json) => fc.nat(Math.max(0, json.length - 1)).map((n) => json.slice(0, n))),
  fc.constantFrom(
    '{',
    '}',
    '{"title":',
    '{"title":"a"',
    "{'title':'a'}",
    '{"title":"a",}',
    '{"title":"a"}garbage',
    '{"title":"a"}{"title":"b"}',
    'null',
    'true',
    '0',
    '""',
    '[]',
    '{}',
    ' ',
    '\ufeff{"title":"bom"}',
    '{"title":"a\\u0000b"}',
    '{"title":"x\\udfffy"}',
    '{"title":"\\ud83d\\ude00"}',
    '{"title":"\\uZZZZ"}',
    '{"title":"a","title":"b"}',
    '{"__proto__":{"title":"p"},"title":"q"}',
    '{"constructor":{"prototype":{"title":"c"}}}',
    '{"title":1e999}',
    '{"title":123456789012345678901234567890}',
    '{"title":-0}',
    '{"title":"raw \u0000 NUL"}',
    '{"title":"ok"}\u0000',
    'NaN',
    '-Infinity',
  ),
  fc.uint8Array({ maxLength: 48 }),
  fc.constantFrom(
    Uint8Array.from([0x7b, 0x22, 0x74, 0x69, 0x74, 0x6c, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
    Uint8Array.from(
      Buffer.concat([
        Buffer.from('{"title":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]),
    ),
    Uint8Array.from(
      Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
    ),
    Uint8Array.from(Buffer.from('{"title":"utf-16"}', 'utf16le')),
  ),
  fc.integer({ min: 1, max: 30_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 1, max: 6_000 }).map((n) => `{"title":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`),
  fc.integer({ min: 300, max: 5_000 }).map((n) => `{"title":${'9'.repeat(n)}}`),
  fc.integer({ min: 65_400, max: 66_000 }).map((n) => JSON.stringify({ title: 'o'.repeat(n) })),
);

const percentEncodedBytes = fc
  .uint8Array({ minLength: 1, maxLength: 8 })
  .map((bytes) => [...bytes].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''));

const segment = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom('{A}', '{B}', '{new}', 'note-000000000000000000000000', 'missing'),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      '%',
      '%zz',
      '%E0%A4%A',
      '%00',
      '%2F',
      '..',
      '%2e%2e',
      ';x=1',
      '%ED%A0%80',
      '%C0%AF',
      '%FF',
      `${PATH_MARKER}`,
      `${PATH_MARKER}%E0%A4%A`,
    ),
  },
  { weight: 2, arbitrary: percentEncodedBytes },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.integer({ min: 79, max: 102 }).map((n) => 'k'.repeat(n)) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 200, max: 3_000 }).map((n) => `${PATH_MARKER}${'L'.repeat(n)}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 10 }) },
);

const query = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '?',
      '?x=1',
      '?user=alice',
      '?user=',
      '?user=a%00b',
      '?user=%ED%A0%80',
      '?user=alice&user=bob',
      '?%',
      '?a[b]=1',
      '?__proto__[x]=1',
      '?constructor[prototype][x]=1',
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .string({ unit: 'binary-ascii', maxLength: 10 })
      .map((s) => `?user=${encodeURIComponent(s)}`),
  },
);

const target = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.constantFrom('/api/notes/', '/idempotency/', '/api/notes/{A}/history/', '/__faults/'),
        segment,
        query,
      )
      .map((parts) => parts.join('')),
  },
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          '/api/notes',
          '/api/notes/{A}',
          '/api/notes/{B}',
          '/api/notes/{new}',
          '/auth/login',
          '/idempotency',
          '/__stats',
          '/__faults/edit',
          '/',
          '/index.html',
        ),
        query,
      )
      .map((parts) => parts.join('')),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '*',
      'http://evil.example/api/notes',
      '//api//notes',
      '/api//notes',
      '/API/NOTES',
      '/api/notes#frag',
      '/api/notes/{A}#x',
      '/%',
      `/${'d'.repeat(8_000)}`,
      `/api/notes/${'e'.repeat(20_000)}`,
      '/api/notes/{A}/',
      '/api/./notes',
      '/api/notes/../notes',
    ),
  },
);

const method = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'PUT',
      'HEAD',
      'OPTIONS',
      'PROPFIND',
      'SEARCH',
      'QUERY',
      'TRACE',
      'PURGE',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('get', 'Post', 'BREW', 'GET\t', 'CONNECT', 'P@TCH') },
);

/** `Authorization` values, mostly alice's token. */
export const authorization = fc.oneof(
  { weight: 8, arbitrary: fc.constant('Bearer {token:alice}') },
  { weight: 2, arbitrary: fc.constantFrom(...TOKEN_NAMES.map((name) => `Bearer {token:${name}}`)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'Bearer',
      'Bearer ',
      'bearer {token:alice}',
      'Basic YWxpY2U6eA==',
      'Bearer a.b.c',
      'Bearer {token:alice}x',
      `Bearer ${'A'.repeat(5_000)}`,
      'Bearer {token:alice}, Bearer {token:bob}',
    ),
  },
);

const idempotencyKey = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom('"fuzz-key-0000001"', '"fuzz-key-0000002"', 'fuzz-key-0000003'),
  },
  { weight: 6, arbitrary: fc.stringMatching(/^[a-f0-9]{24}$/).map((hex) => `"fuzz-${hex}"`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"short"',
      '""',
      '"has space here"',
      '"fuzz-aaaaaaaa", "fuzz-bbbbbbbb"',
      '"fuzz-unterminated',
      '"fuzz-esc\\"aped"',
      `"${'k'.repeat(81)}"`,
      '"caf\u00e9-12345"',
      ':Ynl0ZXM=:',
      '?1',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 30 }) },
);

const ifMatch = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 6 }).map((n) => `"${n}"`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '1',
      '"2147483647"',
      '"2147483648"',
      '"4294967296"',
      '"999999999999999"',
      '"9999999999999999"',
      '"-1"',
      '"1.5"',
      '*',
      'W/"1"',
      '""',
      '"1", "2"',
      '"0001"',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 12 }) },
);

const contentDigest = fc.oneof(
  { weight: 5, arbitrary: fc.constant('{digest}') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
      'sha-256=:abc:',
      'sha-512=:AAAA:',
      '{digest}, sha-512=:AA==:',
      'sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=',
      'garbage',
      '',
    ),
  },
);

/** `Content-Type` values, mostly `application/json`. */
export const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'APPLICATION/JSON',
      'application/json;',
      'application/json; charset=',
      'application/problem+json',
      'application/merge-patch+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '*/*',
      '',
      'application/json, text/plain',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 20 }) },
);

/** One more header, odd or oversized. */
export const extraHeader = fc.oneof(
  fc.constantFrom<[string, string]>(
    ['expect', '100-continue'],
    ['expect', 'something-else'],
    ['x-forwarded-for', '203.0.113.9'],
    ['content-encoding', 'gzip'],
    ['accept', 'application/xml'],
    ['connection', 'keep-alive, upgrade'],
    ['upgrade', 'websocket'],
    ['origin', 'http://evil.example'],
    ['cookie', 'a=b'],
    ['transfer-encoding', 'chunked'],
    ['content-length', '3'],
    ['idempotency-key', '"fuzz-key-0000009"'],
    ['if-match', '"1"'],
    ['content-type', 'text/plain'],
    ['host', 'second.example'],
  ),
  fc.tuple(
    fc.stringMatching(/^[a-z][a-z-]{0,19}$/),
    fc.string({ unit: 'binary-ascii', maxLength: 30 }),
  ),
  fc.tuple(
    fc.constant('x-big'),
    fc.integer({ min: 8_000, max: 20_000 }).map((n) => 'h'.repeat(n)),
  ),
);

/** The requests of the protocol, well formed: what the hostilities below start from. */
const endpoint = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .record({ title: text, body: fc.option(text) })
      .map(({ title, body }) =>
        base(
          'POST',
          '/api/notes',
          JSON.stringify(body === null ? { title } : { title, body }),
          true,
        ),
      ),
  },
  {
    weight: 3,
    arbitrary: fc
      .record({ note: fc.constantFrom('A', 'new'), title: fc.option(text), body: fc.option(text) })
      .map(({ note, title, body }) =>
        base(
          'PATCH',
          `/api/notes/{${note}}`,
          JSON.stringify({
            ...(title === null ? {} : { title }),
            ...(body === null ? {} : { body }),
          }),
          true,
          `{rev:${note}}`,
        ),
      ),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('A', 'new', 'B')
      .map((note) => base('DELETE', `/api/notes/{${note}}`, undefined, true, `{rev:${note}}`)),
  },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(
        '/api/notes',
        '/api/notes/{A}',
        '/api/notes/{B}',
        '/api/notes/{new}',
        '/idempotency/fuzz-key-0000001',
        '/idempotency',
        '/__stats?user=alice',
        '/__stats',
      )
      .map((target) => base('GET', target)),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.constantFrom('alice', 'bob', 'mallory'), text)
      .map((user) => base('POST', '/auth/login', JSON.stringify({ user }))),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ id: fc.constantFrom('{A}', '{B}', '{new}', 'missing'), title: text })
      .map(({ id, title }) =>
        base(
          'POST',
          '/__faults/edit',
          JSON.stringify({ user: id === '{B}' ? 'bob' : 'alice', id, title }),
        ),
      ),
  },
);

function base(
  method: string,
  target: string,
  body?: string,
  write = false,
  revision?: string,
): HostileRequest {
  const headers: Array<[string, string]> = [['authorization', 'Bearer {token:alice}']];
  if (write) headers.push(['idempotency-key', '"fuzz-{fresh}"']);
  if (revision) headers.push(['if-match', revision]);
  if (body !== undefined)
    headers.push(['content-type', 'application/json'], ['content-digest', '{digest}']);
  return { method, target, headers, body, chunked: false };
}

type Hostility = (request: HostileRequest) => HostileRequest;

/** Replaces header `name` (all copies) with `value`, or removes it when `value` is `null`. */
const setHeader =
  (name: string, value: string | null): Hostility =>
  (request) => ({
    ...request,
    headers: [
      ...request.headers.filter(([n]) => n !== name),
      ...(value === null ? [] : [[name, value] as [string, string]]),
    ],
  });

/** A hostility of weight `weight`: the request changed by `change` with a generated value. */
const changed = <T>(
  weight: number,
  values: fc.Arbitrary<T>,
  change: (request: HostileRequest, value: T) => HostileRequest,
) => ({
  weight,
  arbitrary: values.map(
    (value): Hostility =>
      (request) =>
        change(request, value),
  ),
});

/** A hostility of weight `weight`: header `name` set to a generated value, or removed (`freq`). */
const header = (weight: number, name: string, values: fc.Arbitrary<string>, freq: number) => ({
  weight,
  arbitrary: fc.option(values, { freq }).map((value) => setHeader(name, value)),
});

/** One part of a request made hostile. */
const hostility: fc.Arbitrary<Hostility> = fc.oneof(
  changed(2, method, (request, m) => ({ ...request, method: m })),
  changed(3, target, (request, t) => ({ ...request, target: t })),
  changed(1, query, (request, q) => ({ ...request, target: request.target + q })),
  header(2, 'authorization', authorization, 4),
  header(3, 'idempotency-key', idempotencyKey, 5),
  header(2, 'if-match', ifMatch, 5),
  header(2, 'content-digest', contentDigest, 3),
  header(2, 'content-type', contentType, 4),
  changed(4, fc.oneof(malformedBody, jsonText, fc.constant(undefined)), (request, body) => ({
    ...request,
    body,
  })),
  changed(2, extraHeader, (request, extra) => ({
    ...request,
    headers: [...request.headers, extra],
  })),
  { weight: 1, arbitrary: fc.constant<Hostility>((request) => ({ ...request, chunked: true })) },
);

/**
 * A well-formed request of the protocol with up to three of its parts made hostile (none for
 * about one in six, so that the successful paths and the ledger get exercised too). Keys are
 * fresh unless a hostility picks one of a small pool, which makes replays and key reuse.
 */
export const hostileRequest: fc.Arbitrary<HostileRequest> = fc
  .tuple(endpoint, fc.array(hostility, { maxLength: 3 }), fc.stringMatching(/^[a-f0-9]{24}$/))
  .map(([request, hostilities, fresh]) => {
    const made = hostilities.reduce((current, apply) => apply(current), request);
    return {
      ...made,
      headers: made.headers.map(([n, v]): [string, string] => [n, v.replaceAll('{fresh}', fresh)]),
    };
  });

/** Fills a server's placeholders into text. */
export type Fill = (text: string) => string;

/**
 * The bytes of a request for one server: placeholders filled, framed by `Content-Length` or
 * chunked, `Connection: close` so the server ends the exchange. CR and LF inside generated
 * header values are replaced (header injection is the raw-bytes fuzzer's business).
 */
export function requestBytes(request: HostileRequest, fill: Fill): Buffer {
  const body =
    request.batch !== undefined
      ? Buffer.from(JSON.stringify(fillBatch(request.batch, fill)), 'utf8')
      : request.body === undefined
        ? undefined
        : typeof request.body === 'string'
          ? Buffer.from(fill(request.body), 'utf8')
          : Buffer.from(request.body);
  const digest = digestOf(body ?? Buffer.alloc(0));
  const clean = (value: string) => value.replace(/[\r\n]/g, ' ');
  const lines = [`${request.method} ${clean(fill(request.target))} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of request.headers) {
    lines.push(`${name}: ${clean(fill(value).replaceAll('{digest}', digest))}`);
  }
  lines.push('Connection: close');
  if (body !== undefined) {
    lines.push(request.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`);
  }
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8');
  if (body === undefined) return head;
  if (!request.chunked) return Buffer.concat([head, body]);
  return Buffer.concat([
    head,
    Buffer.from(`${body.length.toString(16)}\r\n`),
    body,
    Buffer.from('\r\n0\r\n\r\n'),
  ]);
}

function digestOf(bytes: Uint8Array): string {
  return `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`;
}

/** Fills a batch template: every string, and in each item `{digest}` for its own body. */
function fillBatch(value: unknown, fill: Fill): unknown {
  if (typeof value === 'string') return fill(value);
  if (Array.isArray(value)) return value.map((item) => fillBatch(item, fill));
  if (typeof value !== 'object' || value === null) return value;
  const filled = Object.fromEntries(
    Object.entries(value).map(([name, member]) => [name, fillBatch(member, fill)]),
  );
  const { headers, body } = filled;
  if (typeof headers === 'object' && headers !== null && !Array.isArray(headers)) {
    const digest = digestOf(Buffer.from(typeof body === 'string' ? body : '', 'utf8'));
    filled.headers = Object.fromEntries(
      Object.entries(headers).map(([name, header]) => [
        name,
        typeof header === 'string' ? header.replaceAll('{digest}', digest) : header,
      ]),
    );
  }
  return filled;
}

/** A request for a failure report: the body shortened, bytes as hex. */
export function describeRequest(request: HostileRequest): string {
  const body =
    request.batch !== undefined
      ? `batch ${JSON.stringify(request.batch).slice(0, 600)}`
      : request.body === undefined
        ? ''
        : typeof request.body === 'string'
          ? JSON.stringify(
              request.body.length > 200
                ? `${request.body.slice(0, 200)}…(${request.body.length})`
                : request.body,
            )
          : `0x${Buffer.from(request.body).subarray(0, 100).toString('hex')}`;
  const target = request.target.length > 200 ? `${request.target.slice(0, 200)}…` : request.target;
  const headers = request.headers.map(
    ([n, v]) => `${n}: ${v.length > 100 ? `${v.slice(0, 100)}…` : v}`,
  );
  return `${JSON.stringify(request.method)} ${JSON.stringify(target)} ${JSON.stringify(headers)} ${body}${request.chunked ? ' (chunked)' : ''}`;
}

/**
 * Requests that no token authorises, so they change no state and may be sent concurrently:
 * the seeds of the raw-byte mutations.
 */
const RAW_SEEDS = [
  'GET /api/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  'POST /api/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nIdempotency-Key: "fuzz-key-0000001"\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"title":"raw"}',
  'PATCH /api/notes/x HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-Match: "1"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n',
  'GET /idempotency/fuzz-key-0000001 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  'DELETE /api/notes/x HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-Match: "1"\r\nConnection: close\r\n\r\n',
  'OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  'GET /__stats?user=nobody HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  'POST /api/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
].map((text) => Buffer.from(text, 'latin1'));

const specialBytes = fc.constantFrom(
  ...['\0', '\r', '\n', '\r\n', ' ', '\t', ':', '%', '"', '\x7f', '\xff', '\x80'].map((s) =>
    Buffer.from(s, 'latin1'),
  ),
);

type Mutation = (bytes: Buffer) => Buffer;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 0, max: 255 })).map(
    ([at, byte]): Mutation =>
      (bytes) => {
        const copy = Buffer.from(bytes);
        if (copy.length > 0) copy[Math.floor(at * (copy.length - 1))] = byte;
        return copy;
      },
  ),
  fc
    .tuple(
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.oneof(
        specialBytes,
        fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b)),
      ),
    )
    .map(
      ([at, insert]): Mutation =>
        (bytes) => {
          const i = Math.floor(at * bytes.length);
          return Buffer.concat([bytes.subarray(0, i), insert, bytes.subarray(i)]);
        },
    ),
  fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 12 })).map(
    ([at, count]): Mutation =>
      (bytes) => {
        const i = Math.floor(at * bytes.length);
        return Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + count)]);
      },
  ),
  fc.constant<Mutation>((bytes) =>
    Buffer.from(bytes.toString('latin1').replaceAll('\r\n', '\n'), 'latin1'),
  ),
  fc.double({ min: 0, max: 1, noNaN: true }).map(
    (at): Mutation =>
      (bytes) => {
        const lines = bytes.toString('latin1').split('\r\n');
        const i = Math.floor(at * (lines.length - 1));
        lines.splice(i, 0, lines[i] ?? '');
        return Buffer.from(lines.join('\r\n'), 'latin1');
      },
  ),
);

/** Raw bytes for one connection: a mutated seed request, a truncated one (it stalls), or noise. */
export const hostileBytes: fc.Arbitrary<Buffer> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.constantFrom(...RAW_SEEDS), fc.array(mutation, { minLength: 1, maxLength: 3 }))
      .map(([seed, mutations]) => mutations.reduce<Buffer>((bytes, mutate) => mutate(bytes), seed)),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...RAW_SEEDS), fc.double({ min: 0, max: 1, noNaN: true }))
      .map(([seed, at]) => seed.subarray(0, Math.floor(at * seed.length))),
  },
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 200 }).map((b) => Buffer.from(b)),
  },
);
