import { describe, expect, it } from 'vitest';
import type { BatchRoute } from '../../shared/model/ports.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import {
  type BatchGroup,
  type BatchLimits,
  DEFAULT_BATCH,
  gather,
  planBatchRoute,
  requestBytes,
  scanLimit,
} from '../../shared/plan/batch-groups.ts';
import { observe, updateRow } from './fixtures.ts';

const URL = 'https://api.test/sync/batch';
const PATH = '/api/notes/n_1';

function request(body: string, headers: Record<string, string> = {}): RowRequest {
  return { ...updateRow().request!, url: PATH, body, headers };
}

/** A row of its own record whose request body is `bytes` long. */
function rowOf(n: number, bytes = 10) {
  const row = updateRow({ id: `notes-${String(n).padStart(24, '0')}`, targetId: `n_${n}` });
  return observe({ ...row, request: { ...row.request!, body: 'x'.repeat(bytes), headers: {} } });
}

const offered = (maxRows: number, maxBytes: number): BatchRoute => ({
  url: URL,
  maxRows,
  maxBytes,
});

/** SPEC §15.1: a scan reads at least a full selection batch and, with batches on, a full request batch. */
describe('scanLimit', () => {
  it.each([
    { name: 'batches off: the selection batch', batchSize: 50, batch: false as const, limit: 50 },
    { name: 'batches on by default: 50 rows', batchSize: 10, batch: {}, limit: 50 },
    { name: 'a larger request batch reads more', batchSize: 10, batch: { maxRows: 80 }, limit: 80 },
    { name: 'a larger selection batch wins', batchSize: 100, batch: { maxRows: 20 }, limit: 100 },
  ])('$name', ({ batchSize, batch, limit }) => {
    expect(scanLimit(batchSize, batch)).toBe(limit);
  });
});

/** SPEC §15.1: the tightest of the endpoint's, the engine's and the handler's limits, or alone. */
describe('planBatchRoute', () => {
  const small = request('x'.repeat(100));
  const cases: {
    name: string;
    request: RowRequest;
    offered: BatchRoute;
    engine: BatchLimits;
    handler?: BatchLimits;
    route: BatchRoute | undefined;
  }[] = [
    {
      name: 'the engine defaults cap a generous endpoint',
      request: small,
      offered: offered(1_000, 10 * 1024 * 1024),
      engine: {},
      route: { url: URL, ...DEFAULT_BATCH },
    },
    {
      name: 'the endpoint’s own limits win when tighter',
      request: small,
      offered: offered(10, 4_096),
      engine: {},
      route: { url: URL, maxRows: 10, maxBytes: 4_096 },
    },
    {
      name: 'the engine’s tuning wins when tighter',
      request: small,
      offered: offered(100, 1024 * 1024),
      engine: { maxRows: 5, maxBytes: 2_000 },
      route: { url: URL, maxRows: 5, maxBytes: 2_000 },
    },
    {
      name: 'the handler’s limits win when tighter',
      request: small,
      offered: offered(100, 1024 * 1024),
      engine: {},
      handler: { maxRows: 3, maxBytes: 1_000 },
      route: { url: URL, maxRows: 3, maxBytes: 1_000 },
    },
    {
      name: 'a batch of fewer than two rows is none: the row goes alone',
      request: small,
      offered: offered(100, 1024 * 1024),
      engine: {},
      handler: { maxRows: 1 },
      route: undefined,
    },
    {
      name: 'a row that alone fills a batch goes alone',
      request: request('x'.repeat(2_000)),
      offered: offered(100, 1_000),
      engine: {},
      route: undefined,
    },
  ];
  it.each(cases)('$name', ({ request, offered, engine, handler, route }) => {
    expect(planBatchRoute(request, offered, engine, handler)).toEqual(route);
  });
});

/** About the bytes of an item: body, URL, headers and the item's punctuation. */
describe('requestBytes', () => {
  it.each([
    {
      name: 'an empty body counts the URL and the item',
      request: request(''),
      bytes: 64 + PATH.length,
    },
    {
      name: 'the body counts byte for byte',
      request: request('abcd'),
      bytes: 64 + PATH.length + 4,
    },
    {
      name: 'each header counts its name, value and punctuation',
      request: request('', { 'idempotency-key': '"k"' }),
      bytes: 64 + PATH.length + 15 + 3 + 6,
    },
  ])('$name', ({ request, bytes }) => {
    expect(requestBytes(request)).toBe(bytes);
  });
});

/** SPEC §15.1: rows fill the open group of their route; a group is ready when full or overflowing. */
describe('gather', () => {
  const ids = (groups: BatchGroup[]) => groups.map((g) => g.rows.map(({ row }) => row.targetId));

  it.each([
    {
      name: 'rows wait in the open group until it holds maxRows, then it is ready',
      route: offered(3, 100_000),
      rows: [1, 2, 3, 4].map((n) => rowOf(n)),
      ready: [[], [], [['n_1', 'n_2', 'n_3']], []],
      open: [['n_4']],
    },
    {
      name: 'a row that would overflow the bytes readies the open group and opens the next',
      route: offered(10, 2 * requestBytes(rowOf(1, 100).row.request!)),
      rows: [rowOf(1, 100), rowOf(2, 100), rowOf(3, 100)],
      ready: [[], [], [['n_1', 'n_2']]],
      open: [['n_3']],
    },
  ])('$name', ({ route, rows, ready, open }) => {
    const groups = new Map<string, BatchGroup>();
    expect(rows.map((row) => ids(gather(groups, route, row)))).toEqual(ready);
    expect(ids([...groups.values()])).toEqual(open);
  });

  it('a group keeps the tightest limits of the rows inside', () => {
    const groups = new Map<string, BatchGroup>();
    gather(groups, offered(10, 100_000), rowOf(1));
    gather(groups, offered(4, 50_000), rowOf(2));
    expect(groups.get(URL)?.route).toEqual({ url: URL, maxRows: 4, maxBytes: 50_000 });
  });
});
