import type { AppPage } from './support/app-page.ts';
import { deferredCreate } from './support/deferred.ts';
import { test as base, expect } from './support/fixtures.ts';
import { workerEvents } from './support/worker-events.ts';

/**
 * SPEC §12 fallbacks, in a browser without Background Sync (Firefox, Safari): neither the pages
 * nor the worker have `registration.sync` or `periodicSync`, so nothing wakes the worker when
 * connectivity returns with every page closed. Rows that wait must still go: on the page's
 * `online` event while it is open, when a page opens again, and from the start of a worker the
 * browser had stopped.
 */

/**
 * `open` opens the test page in a context whose pages and worker have neither API, as the test's
 * user with persisted credentials, so a restarted worker can send with no page open (SPEC §13).
 */
const test = base.extend<{ open: () => Promise<AppPage> }>({
  open: async ({ context, openApp }, use) => {
    await context.addInitScript(() => {
      for (const api of ['sync', 'periodicSync']) {
        Object.defineProperty(ServiceWorkerRegistration.prototype, api, {
          get: () => undefined,
          configurable: true,
        });
      }
    });
    await use(async () => {
      const app = await openApp({ persist: true, sw: { sync: 'none' } });
      const apis = await app.page.evaluate(async () => {
        const registration = await navigator.serviceWorker.ready;
        return [registration.sync, registration.periodicSync];
      });
      expect(apis).toEqual([undefined, undefined]);
      return app;
    });
  },
});

test('without Background Sync, offline edits go when the page comes back online, and when a page opens again', async ({
  context,
  open,
  server,
  user,
}) => {
  const app = await open();

  // The page stays open: going online is what sends it.
  await context.setOffline(true);
  const first = await app.createNote('while open');
  expect(await app.total()).toBe(1);
  await context.setOffline(false);
  await expect.poll(async () => (await server.stats(user)).effectsByKey[first]).toBe(1);

  // Every page closes while offline; no event tells the worker the network returned. What
  // waited goes on the worker's own backoff timer while it lives (SPEC §21: whichever comes
  // first, that timer or the next page to open), and the next page to open sends whatever is
  // left — once, either way.
  await context.setOffline(true);
  const second = await app.createNote('after closing');
  await app.page.close();
  await context.setOffline(false);
  const again = await open();
  await expect.poll(async () => (await server.stats(user)).effectsByKey[second]).toBe(1);
  await expect.poll(() => again.total()).toBe(0);
  expect((await server.stats(user)).effectsByKey).toEqual({ [first]: 1, [second]: 1 });
});

test('without Background Sync, a worker the browser stopped sends what waited on backoff when it starts again', async ({
  context,
  open,
  server,
  user,
}) => {
  const app = await open();
  // Turned away once with `Retry-After: 1`: the row waits on backoff...
  const id = await deferredCreate(app, server, user, 'after a restart', 1);
  const before = (await workerEvents(context)).map((event) => event.holder);
  // ...when the browser stops the worker and every page closes. Nothing is registered to wake it.
  const workers = await app.controlWorkers();
  await workers.stopAll();
  await workers.detach();
  await app.page.close();

  await open();
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  // A new worker instance, started by the page, sent it: its start flush ran. The server applies
  // the write before the worker reads its answer, so the settle is waited for, not assumed.
  const newEvents = async () =>
    (await workerEvents(context)).filter((event) => !before.includes(event.holder));
  await expect
    .poll(async () =>
      (await newEvents())
        .filter((event) => event.type === 'settled' && event.id === id)
        .map((e) => e.outcome),
    )
    .toEqual(['success']);
  const events = await newEvents();
  expect(events.some((event) => event.type === 'flushed' && event.trigger === 'start')).toBe(true);
});
