import { expect, test } from './support/fixtures.ts';
import { workerEvents } from './support/worker-events.ts';

/**
 * SPEC §23 in Chromium: the worker's wake-up timer is gone while rows are due (released by an
 * update found that never took over) and the sync event has already given up; the watchdog sees
 * it within its bound, flushes again and registers sync again, and the row goes, once.
 */

const STALL_MS = 2000;

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

  // The wake-up timer goes: an update found releases it, and this one never comes.
  const [worker] = context.serviceWorkers();
  await worker!.evaluate(() =>
    (globalThis as unknown as ServiceWorkerGlobalScope).registration.dispatchEvent(
      new Event('updatefound'),
    ),
  );
  await server.clearFaults();
  const cleared = Date.now();

  // Due within the server's Retry-After (1 s) or the backoff's cap (2 s), then the bound.
  await expect
    .poll(async () => (await server.stats(user)).effectsByKey[id], { timeout: 15_000 })
    .toBe(1);
  const sentAfter = Date.now() - cleared;
  expect(sentAfter).toBeLessThan(2000 + STALL_MS + 3000);

  const events = await workerEvents(context);
  expect(events).toContainEqual(
    expect.objectContaining({ type: 'stalled', cause: 'not_attempted', action: 'healed' }),
  );
  expect(events.filter((e) => e.type === 'flushed').map((e) => e.trigger)).toContain('watchdog');
  await expect.poll(() => app.total()).toBe(0);
  expect((await server.stats(user)).effects).toBe(1);
  console.log(`healed: sent ${sentAfter} ms after the server recovered (bound ${STALL_MS} ms)`);
});
