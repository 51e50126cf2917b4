import fc from 'fast-check';
import {
  authorization,
  contentType,
  extraHeader,
  type HostileRequest,
  hostileRequest,
} from './hostile-requests.ts';

/**
 * Generated hostile batches (SPEC §15.1) for the server fuzz test: envelopes of items that are
 * the generated hostile requests themselves (the same methods, paths, keys, digests, bodies),
 * envelopes broken in their structure, batches over the limits, and hostile batch requests
 * (credentials, media type, framing). Keys come from the same pool as the single requests, so
 * batches replay, reuse and race keys first sent alone.
 */

/** A generated request as a batch item: its method, target, headers and body as text. */
function toItem(request: HostileRequest): Record<string, unknown> {
  const headers: Record<string, string> = {};
  for (const [name, value] of request.headers) headers[name] = value;
  const body =
    request.body === undefined
      ? null
      : typeof request.body === 'string'
        ? request.body
        : Buffer.from(request.body).toString('utf8');
  return { method: request.method, path: request.target, headers, body };
}

type ItemHostility = (item: Record<string, unknown>) => unknown;

/** Breaks an item's structure: every one of these makes the whole envelope malformed. */
const structural = fc.constantFrom<ItemHostility>(
  () => 'not an item',
  () => null,
  () => [],
  (item) => ({ ...item, method: 5 }),
  (item) => ({ ...item, path: null }),
  (item) => ({ ...item, headers: 'idempotency-key: x' }),
  (item) => ({ ...item, headers: { ...(item.headers as object), 'if-match': 1 } }),
  (item) => ({
    ...item,
    headers: { ...(item.headers as object), 'If-Match': '"1"', 'if-match': '"2"' },
  }),
  (item) => ({ ...item, body: { title: 'a value, not text' } }),
  (item) => ({ ...item, body: 7 }),
  ({ body: _body, ...item }) => item,
);

/** Harmless to the structure: members a newer client might add. */
const extra = fc.constantFrom<ItemHostility>(
  (item) => ({ ...item, id: 'row-1' }),
  (item) => ({
    ...item,
    headers: { ...(item.headers as object), 'Content-Type': 'application/json' },
  }),
);

const item: fc.Arbitrary<unknown> = fc
  .tuple(
    hostileRequest.map(toItem),
    fc.oneof(
      { weight: 24, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: structural },
      { weight: 2, arbitrary: extra },
    ),
  )
  .map(([made, hostility]) => (hostility === null ? made : hostility(made)));

/** A small well-formed create, for batches that are only too many or too large. */
const create = (n: number) => ({
  method: 'POST',
  path: '/api/notes',
  headers: {
    'idempotency-key': `"fuzz-limit-${String(n).padStart(8, '0')}"`,
    'content-type': 'application/json',
  },
  body: '{"title":"limit"}',
});

const envelope: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 12, arbitrary: fc.array(item, { maxLength: 8 }).map((items) => ({ items })) },
  {
    weight: 1,
    arbitrary: fc.array(item, { maxLength: 3 }).map((items) => ({ items, version: 2, extra: {} })),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      null,
      5,
      'items',
      [],
      {},
      { items: {} },
      { items: 'x' },
      { Items: [] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 99, max: 102 })
      .map((n) => ({ items: Array.from({ length: n }, (_, i) => create(i)) })),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1_040_000, max: 1_060_000 }).map((n) => ({
      items: [{ ...create(0), body: JSON.stringify({ title: 'x'.repeat(n) }) }],
    })),
  },
);

/** What the batch request itself may be: its target, credentials, media type and framing. */
const batchTarget = fc.oneof(
  { weight: 12, arbitrary: fc.constant('/sync/batch') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('/sync/batch?x=1', '/sync/batch/', '/SYNC/BATCH', '/sync//batch'),
  },
);

/** A batch request with a generated envelope. */
export const hostileBatch: fc.Arbitrary<HostileRequest> = fc
  .record({
    target: batchTarget,
    batch: envelope,
    authorization: fc.oneof(
      { weight: 6, arbitrary: fc.constant('Bearer {token:alice}') },
      { weight: 1, arbitrary: authorization },
    ),
    contentType: fc.oneof(
      { weight: 8, arbitrary: fc.constant('application/json') },
      { weight: 1, arbitrary: contentType },
    ),
    extra: fc.oneof(
      { weight: 12, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: extraHeader },
    ),
    method: fc.oneof(
      { weight: 20, arbitrary: fc.constant('POST') },
      { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH') },
    ),
    chunked: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  })
  .map(
    ({
      target,
      batch,
      authorization: auth,
      contentType: type,
      extra: header,
      method,
      chunked,
    }) => ({
      method,
      target,
      headers: [
        ['authorization', auth] as [string, string],
        ['content-type', type] as [string, string],
        ...(header === null ? [] : [header]),
      ],
      batch,
      chunked,
    }),
  );
