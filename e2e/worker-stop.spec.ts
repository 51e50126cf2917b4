import type { AppPage } from './support/app-page.ts';
import { deferredCreate } from './support/deferred.ts';
import { expect, test } from './support/fixtures.ts';
import type { ReferenceServer } from './support/server.ts';
import type { WorkerEvent } from './support/worker-events.ts';

/**
 * SPEC §13.1 in Chromium: the browser stops the worker while a page with a live view stays open
 * (CDP `ServiceWorker.stopAllWorkers`, which is what an idle stop does to the page's port). The
 * view must follow rows settled afterwards — by a new instance the page did not start, or by a
 * page sender while no instance runs — and the page's next call must not wait for its timeout.
 */

interface View {
  id: string;
  status: string;
}

/**
 * The page's live view shows one row waiting on backoff (`title`), then the browser stops the
 * worker. Returns the row's id and the control over the page's workers.
 */
async function deferredInViewThenStopped(
  app: AppPage,
  server: ReferenceServer,
  user: string,
  title: string,
) {
  const workers = await app.controlWorkers();
  await app.subscribe();
  const id = await deferredCreate(app, server, user, title);
  await expect
    .poll(async () => (await app.snapshots<View>()).at(-1)?.map((view) => view.status))
    .toEqual(['deferred']);
  await workers.stopAllAndWait();
  return { id, workers };
}

/** How long after `at` the page's view first showed no rows. */
async function emptiedAfter(app: AppPage, at: number): Promise<number> {
  const snapshots = await app.timedSnapshots<View>();
  const empty = snapshots.find((snapshot) => snapshot.at >= at && snapshot.rows.length === 0);
  return empty === undefined ? Number.POSITIVE_INFINITY : empty.at - at;
}

test('a live view follows rows a new worker instance settles after a stop, and the next call does not wait for the timeout', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ persist: true });
  // The browser stops the worker; later a push starts a new instance, which sends the row.
  const { id, workers } = await deferredInViewThenStopped(
    app,
    server,
    user,
    'settled by the next instance',
  );
  await workers.push(JSON.stringify({ type: 'sw-outbox.flush' }));
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);

  // The view, subscribed again on the new instance without any call, shows the row settled.
  await expect.poll(async () => (await app.snapshots<View>()).at(-1)).toEqual([]);
  const settled = (await app.events<WorkerEvent & { at: number }>()).find(
    (event) => event.type === 'settled' && event.id === id && event.outcome === 'success',
  );
  const lag = await emptiedAfter(app, settled!.at);
  expect(lag).toBeLessThan(1000);
  test.info().annotations.push({
    type: 'view behind a new instance',
    description: `${lag} ms from the settle to the page's view`,
  });

  // Stopped again: the next call costs one worker start, not the 5 s timeout.
  await workers.stopAllAndWait();
  const stats = await app.timed('stats');
  expect(stats.ok).toBe(true);
  expect(stats.ms).toBeLessThan(1000);
  test.info().annotations.push({
    type: 'first call after a stop',
    description: `${Math.round(stats.ms)} ms`,
  });
});

test('a live view follows rows a page sender settles while the worker is stopped', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ persist: true, sw: { lease: '10000' } });
  const { id } = await deferredInViewThenStopped(app, server, user, 'settled by a tab');

  // A tab outside the worker's scope runs the page sender on the same database and sends it.
  const tab = await openApp({ path: '/outside/', pageSender: true, sw: { lease: '10000' } });
  expect(await tab.mode()).toBe('page');
  const flushed = Date.now();
  await tab.call('flush', { force: true });
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);

  // Only the store's change notice told the first page; it started the worker to read the rows.
  await expect.poll(async () => (await app.snapshots<View>()).at(-1)).toEqual([]);
  const lag = await emptiedAfter(app, flushed);
  expect(lag).toBeLessThan(1000);
  test.info().annotations.push({
    type: 'view behind a page sender',
    description: `${lag} ms from the flush to the page's view`,
  });
  const settlers = (await tab.events<WorkerEvent>()).filter(
    (event) => event.type === 'settled' && event.id === id,
  );
  expect(settlers.map((event) => event.holder)).toEqual(['page']);
});
