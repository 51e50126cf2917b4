import { grantBackgroundSync } from './support/cdp.ts';
import { deferredCreate } from './support/deferred.ts';
import { expect, test } from './support/fixtures.ts';
import { workerEvents } from './support/worker-events.ts';

test('a push and a periodic sync each flush the outbox, in the classic worker build too', async ({
  browser,
  context,
  baseURL,
  openApp,
  server,
  user,
}) => {
  const first = await openApp({ classic: true });
  await grantBackgroundSync(browser, context, first.page, new URL(baseURL!).origin);
  // Once permitted, connecting registers periodic sync (§12).
  const app = await openApp({ classic: true });
  await expect
    .poll(() =>
      app.page.evaluate(
        async () => (await (await navigator.serviceWorker.ready).periodicSync?.getTags()) ?? [],
      ),
    )
    .toEqual(['sw-outbox-periodic']);
  const workers = await app.controlWorkers();

  const pushed = await deferredCreate(app, server, user, 'by push');
  await workers.push(JSON.stringify({ type: 'sw-outbox.flush' }));
  await expect.poll(async () => (await server.stats(user)).effectsByKey[pushed]).toBe(1);

  const periodic = await deferredCreate(app, server, user, 'by periodic sync');
  await workers.periodicSync();
  await expect.poll(async () => (await server.stats(user)).effectsByKey[periodic]).toBe(1);

  // A run reports once it has settled every row, a moment after the server saw the effect.
  const triggers = async () =>
    (await workerEvents(context)).filter((e) => e.type === 'flushed').map((e) => e.trigger);
  await expect.poll(triggers).toEqual(expect.arrayContaining(['push', 'periodicsync']));
  expect((await server.notes(user)).map((note) => note.title).sort()).toEqual([
    'by periodic sync',
    'by push',
  ]);
});

test('a sync that leaves transient failures asks the browser to retry, and the row is sent once the server recovers', async ({
  context,
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  const workers = await app.controlWorkers();
  await server.fault({ kind: 'unavailable', route: 'POST /api/notes', user, retryAfter: 1 });
  const id = await app.createNote('late');

  await workers.sync();
  await expect
    .poll(async () => (await workerEvents(context)).filter((e) => e.type === 'sync_retry').length)
    .toBeGreaterThan(0);
  expect((await server.stats(user)).effects).toBe(0);

  await server.clearFaults();
  await workers.sync();
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  await expect.poll(() => app.total()).toBe(0);
  expect((await server.stats(user)).effects).toBe(1);
});
