import { expect } from '@playwright/test';
import type { CallResult, OpenParams, OutboxTab } from './outbox-tab.ts';
import type { ReferenceServer } from './server.ts';

/**
 * Steps the Chromium specs and the cross-browser guarantees (e2e/browsers/guarantees.ts) take
 * alike, on any browser's tab of the test page. Counted at the server.
 */

/** A page-API call that must be refused on the page, and the error it gets. */
export interface BadCall {
  what: string;
  method: string;
  args: unknown[];
  error: { name?: string; code: string };
}

/** Bad input every browser's page refuses with a typed error (G7). */
export const BAD_INPUT: readonly BadCall[] = [
  {
    what: 'an intent with no collection',
    method: 'enqueue',
    args: [{ kind: 'create', payload: { title: 'no collection' } }],
    error: { name: 'OutboxError', code: 'invalid_intent' },
  },
  {
    what: 'an id with spaces',
    method: 'enqueue',
    args: [{ collection: 'notes', kind: 'create', id: 'no spaces allowed', payload: {} }],
    error: { code: 'invalid_id' },
  },
  {
    what: 'an unknown collection',
    method: 'enqueue',
    args: [{ collection: 'widgets', kind: 'create', payload: {} }],
    error: { code: 'unknown_collection' },
  },
  {
    what: 'a filter of the wrong type',
    method: 'rows',
    args: [{ collection: 7 }],
    error: { code: 'invalid_argument' },
  },
];

/**
 * Makes each bad call (`BAD_INPUT`, then `more`) and expects its typed refusal; then the same
 * connection still answers, with nothing queued, and a valid create is applied once. Returns the
 * refusals in order and the valid create's id.
 */
export async function expectBadInputRefused(
  tab: OutboxTab,
  server: ReferenceServer,
  user: string,
  more: readonly BadCall[] = [],
): Promise<{ refusals: CallResult[]; id: string }> {
  const refusals: CallResult[] = [];
  for (const { what, method, args, error } of [...BAD_INPUT, ...more]) {
    const result = await tab.call(method, ...args);
    expect(result, what).toMatchObject({ ok: false, error });
    refusals.push(result);
  }
  expect(await tab.call('stats')).toMatchObject({ ok: true, value: { total: 0 } });
  const id = await tab.createNote('fine');
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  return { refusals, id };
}

/**
 * Two holders of one outbox about to race (G2): a page the worker controls, and a tab out of
 * the worker's scope — never controlled, so it runs the page sender on the same database. The
 * tab registers the same worker script: another URL would install a new worker mid-test. The
 * server turns away the first `count` creates with a long Retry-After, so the rows the test
 * makes next all wait until both holders are told to flush.
 */
export async function openRacingSenders<Tab extends OutboxTab>(
  open: (params: OpenParams) => Promise<Tab>,
  server: ReferenceServer,
  user: string,
  count: number,
): Promise<{ worker: Tab; tab: Tab }> {
  const worker = await open({ owner: user, login: user, sw: { lease: '10000' } });
  const tab = await open({
    path: '/outside/',
    owner: user,
    login: user,
    pageSender: true,
    sw: { lease: '10000' },
    leaseMs: 10_000,
  });
  expect(await tab.mode()).toBe('page');
  expect(await worker.mode()).toBe('worker');
  await server.fault({
    kind: 'unavailable',
    route: 'POST /api/notes',
    user,
    count,
    retryAfter: 3600,
  });
  return { worker, tab };
}
