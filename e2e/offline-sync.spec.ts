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
