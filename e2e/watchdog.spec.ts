import { deferredCreate } from './support/deferred.ts';
import { expect, test } from './support/fixtures.ts';
import { workerEvents } from './support/worker-events.ts';

/**
 * SPEC §23 in Chromium: the worker's wake-up timer is gone while rows are due (released by an
 * update found that never took over) and the sync event has already given up; the watchdog sees
 * it within its bound, flushes again and registers sync again, and the row goes, once.
 */

const STALL_MS = 5000;

/** The token a login answered with. */
function tokenOf(result: { ok: boolean; value?: unknown }): string {
  expect(result.ok).toBe(true);
  return result.value as string;
}

test('a lost wake-up timer with a due row is seen and healed within the bound: the row goes once', async ({
  context,
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ sw: { stall: String(STALL_MS) } });
  const workers = await app.controlWorkers();
  await server.fault({ kind: 'unavailable', route: 'POST /api/notes', user, retryAfter: 1 });
  const id = await app.createNote('stalled');

  // The browser's sync gives up for now (its next try is minutes away).
  await workers.sync();
  await expect
    .poll(async () => (await workerEvents(context)).filter((e) => e.type === 'sync_retry').length)
    .toBeGreaterThan(0);

  // The wake-up timer goes: an update found releases it, and this one never comes. A run still
  // in flight then would arm a new one: release again until no run comes for longer than the
  // backoff's cap (2 s), well inside the bound.
  const [worker] = context.serviceWorkers();
  const flushes = async () =>
    (await workerEvents(context)).filter((e) => e.type === 'flushed').length;
  let released = false;
  for (let i = 0; i < 5 && !released; i++) {
    await worker!.evaluate(() =>
      (globalThis as unknown as ServiceWorkerGlobalScope).registration.dispatchEvent(
        new Event('updatefound'),
      ),
    );
    const before = await flushes();
    await app.page.waitForTimeout(2500);
    released = (await flushes()) === before;
  }
  expect(released).toBe(true);
  await server.clearFaults();
  const cleared = Date.now();

  // Due within the server's Retry-After (1 s) or the backoff's cap (2 s), then the bound.
  await expect
    .poll(async () => (await server.stats(user)).effectsByKey[id], { timeout: 15_000 })
    .toBe(1);
  const sentAfter = Date.now() - cleared;
  expect(sentAfter).toBeLessThan(2000 + STALL_MS + 2000);

  const events = await workerEvents(context);
  expect(events).toContainEqual(
    expect.objectContaining({ type: 'stalled', cause: 'not_attempted', action: 'healed' }),
  );
  expect(events.filter((e) => e.type === 'flushed').map((e) => e.trigger)).toContain('watchdog');
  await expect.poll(() => app.total()).toBe(0);
  expect((await server.stats(user)).effects).toBe(1);
  console.log(`healed: sent ${sentAfter} ms after the server recovered (bound ${STALL_MS} ms)`);
});

test('health() in the page names held rows and the storage answers, persistence is asked for on request, and a trace after a 401 window holds no token', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  const before = await app.page.evaluate(() => navigator.storage.persisted());
  const health = await app.call('health');
  expect(health).toMatchObject({
    ok: true,
    value: { stalled: null, storage: { persisted: before } },
  });
  const storage = (health as { value: { storage: { usage?: number; quota?: number } } }).value
    .storage;
  expect(storage.quota).toBeGreaterThan(0);

  const asked = await app.call('requestPersistence');
  const after = await app.page.evaluate(() => navigator.storage.persisted());
  expect(asked).toEqual({ ok: true, value: after });
  expect(await app.call('health')).toMatchObject({ value: { storage: { persisted: after } } });
  console.log(`Chromium: persisted() ${before}, persist() answered ${after}`);

  // A 401 window holds the row: health names it; after it, the trace holds neither token.
  const first = tokenOf(await app.login(user));
  await server.expireToken(user);
  const id = await app.createNote('held');
  await expect
    .poll(async () => (await app.value<{ stalled: unknown }>('health')).stalled)
    .toBe('held');
  const second = tokenOf(await app.login(user));
  expect(await app.value('resumeHeld')).toBe(1);
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  await expect
    .poll(async () => (await app.value<{ stalled: unknown }>('health')).stalled)
    .toBe(null);
  const trace = await app.value<string>('exportTrace', { payloads: true });
  expect(trace).toContain('"type":"held"');
  expect(trace).toContain('"type":"settled"');
  for (const secret of [first, second, 'Bearer']) expect(trace).not.toContain(secret);
});

test('the worker stopped with a page open and a row due: a page that observes health starts it and the row goes, once', async ({
  openApp,
  server,
  user,
}) => {
  // The token is kept in IndexedDB, so the next instance has it (SPEC §13).
  const app = await openApp({ persist: true });
  const workers = await app.controlWorkers();
  const id = await deferredCreate(app, server, user, 'after the stop', 2);
  // The browser stops the worker (its sync event dies with it): nothing is armed any more.
  await workers.stopAllAndWait();
  await app.page.waitForTimeout(4000);
  expect((await server.stats(user)).effectsByKey[id]).toBeUndefined();

  const watching = Date.now();
  await app.page.evaluate(() =>
    (globalThis as unknown as { e2e: { watchHealth(ms: number): void } }).e2e.watchHealth(1000),
  );
  // The page's first calls after the stop may each wait out their timeout (5 s, SPEC §13) before
  // the new instance answers: measured 5.1 s and 15.1 s here.
  await expect
    .poll(async () => (await server.stats(user)).effectsByKey[id], { timeout: 30_000 })
    .toBe(1);
  const sentAfter = Date.now() - watching;
  await expect.poll(() => app.total()).toBe(0);
  expect((await server.stats(user)).effects).toBe(1);
  console.log(`stopped worker: sent ${sentAfter} ms after the page began to observe health`);
});
