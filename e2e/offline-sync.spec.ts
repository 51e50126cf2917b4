import { WorkerControl } from './support/cdp.ts';
import { expect, test } from './support/fixtures.ts';
import { workerEvents } from './support/worker-events.ts';

test('intents enqueued offline are sent once each by the sync event after every page has closed', async ({
  context,
  openApp,
  server,
  user,
}) => {
  // Persisted credentials: the worker sends with no tab open (SPEC §13).
  const app = await openApp({ persist: true });
  await context.setOffline(true);
  const ids: string[] = [];
  for (const title of ['one', 'two', 'three']) {
    ids.push(await app.createNote(title));
  }
  expect(await app.total()).toBe(3);
  await app.page.close();
  expect(context.pages()).toHaveLength(0);

  await context.setOffline(false);
  await expect.poll(async () => (await server.stats(user)).effects, { timeout: 20_000 }).toBe(3);
  const stats = await server.stats(user);
  expect(Object.keys(stats.effectsByKey).sort()).toEqual([...ids].sort());
  expect(Object.values(stats.effectsByKey)).toEqual([1, 1, 1]);
  expect((await server.notes(user)).map((note) => note.title).sort()).toEqual([
    'one',
    'three',
    'two',
  ]);

  // A run reports once it has settled every row, a moment after the server saw the effects.
  await expect
    .poll(async () =>
      (await workerEvents(context)).some(
        (event) => event.type === 'flushed' && event.trigger === 'sync' && event.remaining === 0,
      ),
    )
    .toBe(true);
});

/**
 * What a new instance has is what was persisted (SPEC §13 `persist`): no page gives it a token.
 * The outage is the server's (a fault), not the browser's: `context.setOffline` waits on every
 * worker target, and a stopped worker never answers it.
 */
for (const persist of [true, false]) {
  test(`a worker the browser starts after every page has closed and the last instance stopped ${persist ? 'sends with the token it persisted' : 'holds the rows without a persisted token'}`, async ({
    context,
    openApp,
    server,
    user,
  }) => {
    const app = await openApp({ persist });
    const origin = new URL(app.page.url()).origin;
    // A page of the origin outside the worker's scope (no client of it) to reach the workers.
    const outside = await context.newPage();
    await outside.goto(`${origin}/outside-scope`);
    const workers = await WorkerControl.attach(outside, origin);
    await server.fault({ kind: 'unavailable', route: 'POST /api/notes', user, retryAfter: 1 });
    const ids = [await app.createNote('one'), await app.createNote('two')];
    await expect.poll(async () => (await server.requests(user)).length).toBeGreaterThan(0);
    const earlier = new Set((await workerEvents(context)).map((event) => event.holder));
    // The page leaves and the instance that had its token stops while the server still refuses,
    // so no row leaves before the new instance starts.
    await app.page.close();
    await workers.stopAllAndWait();
    await server.clearFaults();
    await workers.sync();
    if (persist) {
      await expect.poll(async () => (await server.stats(user)).effects).toBe(2);
      const stats = await server.stats(user);
      expect(Object.keys(stats.effectsByKey).sort()).toEqual([...ids].sort());
      expect(Object.values(stats.effectsByKey)).toEqual([1, 1]);
    } else {
      // Each row is held for want of credentials by the new instance once it is due again.
      const heldByNewInstance = async () =>
        (await workerEvents(context))
          .filter((event) => event.type === 'held' && !earlier.has(event.holder))
          .map((event) => event.id)
          .sort();
      await expect.poll(heldByNewInstance, { timeout: 20_000 }).toEqual([...ids].sort());
      expect((await server.stats(user)).effects).toBe(0);
    }
  });
}
