import fc from 'fast-check';
import type { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';

/**
 * G7 in a real worker: hostile values — stored straight into IndexedDB, or passed to the page
 * API — get a quarantine or a typed error, never a hang, and the owner's good rows are each
 * applied once (counted at the server).
 */

const HOSTILE_KINDS = [
  'cyclic',
  'deep',
  'function',
  'promise',
  'weakmap',
  'node',
  'proxy',
  'revoked',
  'getter',
  'date',
  'regexp',
  'symbol',
  'bigint',
] as const;

/** The codes a typed refusal of a hostile argument may carry (README: errors). */
const REFUSALS = [
  'invalid_intent',
  'invalid_argument',
  'invalid_id',
  'invalid_value',
  'value_cyclic',
  'value_too_deep',
];

const bad = (kind: string, depth?: number) => ({ hostile: kind, ...(depth ? { depth } : {}) });

/** Each page-API method, with the hostile value put in one of its arguments. */
const CALLS: ReadonlyArray<(value: unknown) => [string, ...unknown[]]> = [
  (v) => ['enqueue', v],
  (v) => ['enqueue', { collection: 'notes', kind: 'create', payload: { title: v } }],
  (v) => ['enqueue', { collection: 'notes', kind: 'create', payload: { title: 'x' }, meta: v }],
  (v) => ['rows', v],
  (v) => ['row', v],
  (v) => ['retry', v],
  (v) => ['discard', v],
  (v) => ['receipt', v],
  (v) => ['conflicts', v],
  (v) => ['receipts', v],
  (v) => ['flush', v],
  (v) => ['setAuth', v],
  (v) => ['setAuth', { authorization: 'Bearer x' }, v],
  (v) => ['subscribe', v],
  (v) => ['subscribe', bad('function'), v],
  (v) => ['watch', v, bad('function')],
  (v) => ['restore', v],
];

/** Calls the page API with generated hostile arguments; every call is refused, typed, quickly. */
async function fuzzArguments(app: AppPage, mode: 'worker' | 'page', runs: number): Promise<number> {
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 0, max: CALLS.length - 1 }),
      fc.constantFrom(...HOSTILE_KINDS),
      fc.constantFrom(65, 1_500, 20_000),
      async (call, kind, depth) => {
        const [method, ...args] = CALLS[call]!(bad(kind, depth));
        // A function is what a listener is.
        fc.pre(!(kind === 'function' && (call === 13 || call === 15)));
        const result = await app.callHostile(method, ...args);
        // A proxy around a plain object reads as that object: the page sender, which posts
        // nothing, may take what it reads through it; the worker's port cannot clone it.
        if (result.ok && kind === 'proxy' && mode === 'page') {
          accepted++;
          return;
        }
        expect(result.ok, `${method}(${kind}) was accepted`).toBe(false);
        if (result.ok) return;
        expect(result.error.name, `${method}(${kind}): ${result.error.message}`).toBe(
          'OutboxError',
        );
        expect(REFUSALS, `${method}(${kind})`).toContain(result.error.code);
        expect(result.ms, `${method}(${kind}) took ${result.ms} ms`).toBeLessThan(3_000);
      },
    ),
    { numRuns: runs, seed: 11 },
  );
  return accepted;
}

test('stored cyclic and deep values are quarantined, visible in rows() with their reason, and the other rows are sent once', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  const planted = (id: string, payload: unknown) => ({
    v: 1,
    id,
    owner: user,
    collection: 'notes',
    kind: 'create',
    targetId: `pending:${id}`,
    savedAt: Date.now(),
    state: 'queued',
    payload,
  });
  const first = await app.createNote('before');
  // Nested 1,500 levels: Chromium hands the worker `null` for it — quarantined by its key.
  await app.plant(planted('notes-0000000000000000000bad01', bad('cyclic')));
  await app.plant(planted('notes-0000000000000000000bad02', bad('deep', 1_500)));
  await app.plant(planted('notes-0000000000000000000bad03', bad('deep', 200)));
  const second = await app.createNote('after');

  // Quarantined rows keep their raw values, cycles included: summarise them in the page.
  const quarantined = () =>
    app.page.evaluate(async () => {
      const e2e = (
        globalThis as unknown as {
          e2e: { call(m: string): Promise<{ ok: boolean; value?: unknown }> };
        }
      ).e2e;
      const result = await e2e.call('rows');
      const views = (result.value ?? []) as Array<{
        id: string;
        status: string;
        row: Record<string, unknown>;
      }>;
      return views
        .map(({ id, status, row }) => ({
          id,
          status,
          blockedCode: row.blockedCode,
          blockedDetail: row.blockedDetail,
          rawUnavailable: row.rawUnavailable,
          rawTitle: (row.raw as { payload?: { title?: unknown; self?: unknown } } | undefined)
            ?.payload,
        }))
        .map((v) => ({
          ...v,
          rawTitle: v.rawTitle?.title,
          cycleKept: v.rawTitle?.self === v.rawTitle,
        }));
    });
  await expect
    .poll(async () => {
      await app.call('flush', { force: true });
      return (await quarantined()).map((v) => v.id).sort();
    })
    .toEqual([
      'notes-0000000000000000000bad01',
      'notes-0000000000000000000bad02',
      'notes-0000000000000000000bad03',
    ]);
  const stats = await server.stats(user);
  expect([stats.effectsByKey[first], stats.effectsByKey[second]]).toEqual([1, 1]);

  const rows = await quarantined();
  const byId = Object.fromEntries(rows.map((view) => [view.id, view]));
  for (const view of rows)
    expect(view).toMatchObject({ status: 'blocked', blockedCode: 'row_corrupt' });
  expect(byId['notes-0000000000000000000bad01']!.blockedDetail).toContain('value_cyclic');
  expect(byId['notes-0000000000000000000bad03']!.blockedDetail).toContain('value_too_deep');
  // The cyclic value is kept as it was, cycle and all.
  expect(byId['notes-0000000000000000000bad01']).toMatchObject({
    rawTitle: 'loop',
    cycleKept: true,
  });
  // The one the browser cannot hand the worker back is named by its key, with the reason.
  expect(byId['notes-0000000000000000000bad02']).toMatchObject({
    blockedDetail: expect.stringContaining('unreadable'),
    rawUnavailable: expect.stringContaining('could not read'),
  });
  // The worker keeps serving; a later edit goes once.
  const third = await app.createNote('later');
  await expect.poll(async () => (await server.stats(user)).effectsByKey[third]).toBe(1);
});

test('every page-API method refuses generated hostile arguments with a typed error, in the worker', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  expect(await app.mode()).toBe('worker');
  await fuzzArguments(app, 'worker', 120);
  const id = await app.createNote('still serving');
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  expect((await server.stats(user)).effects).toBe(1);
});

test.describe('without service workers', () => {
  test.use({ serviceWorkers: 'block' });

  test('every page-API method refuses generated hostile arguments with a typed error, in the page sender', async ({
    openApp,
    server,
    user,
  }) => {
    const app = await openApp({ pageSender: true });
    expect(await app.mode()).toBe('page');
    const accepted = await fuzzArguments(app, 'page', 120);
    // What a proxy read as (headers for setAuth among them) was taken: sign in again.
    await app.login(user);
    await app.call('resumeHeld');
    const id = await app.createNote('still serving');
    await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
    const stats = await server.stats(user);
    expect(Object.values(stats.effectsByKey).every((n) => n === 1)).toBe(true);
    expect(stats.effects).toBeLessThanOrEqual(1 + accepted);
  });
});
