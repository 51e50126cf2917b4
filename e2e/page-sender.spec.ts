import { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';
import { openRacingSenders } from './support/steps.ts';
import type { WorkerEvent } from './support/worker-events.ts';

test.describe('without service workers', () => {
  test.use({ serviceWorkers: 'block' });

  test('a page with no controlling worker syncs through the page sender', async ({
    openApp,
    server,
    user,
    requests,
  }) => {
    const app = await openApp({ pageSender: true });
    expect(await app.mode()).toBe('page');
    const id = await app.createNote('tab');
    await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
    await expect.poll(() => app.total()).toBe(0);
    expect(requests.writes().map((entry) => entry.from)).toEqual(['page']);
  });
});

test('the page sender hands over to the worker once it controls the page', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ pageSender: true });
  await expect.poll(() => app.mode()).toBe('worker');
  const id = await app.createNote('sw');
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  expect(
    requests
      .writes()
      .filter((entry) => entry.key === id)
      .map((entry) => entry.from),
  ).toEqual(['worker']);
});

test('a worker and a page sender flushing the same rows at once send each intent exactly once', async ({
  context,
  baseURL,
  server,
  user,
  requests,
}) => {
  const count = 20;
  // Every first attempt is turned away with a long Retry-After, so all rows wait deferred...
  const { worker, tab } = await openRacingSenders(
    (params) => AppPage.open(context, baseURL!, params),
    server,
    user,
    count,
  );
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(await tab.createNote(`n${i}`));
  }
  await expect
    .poll(async () => (await tab.value<{ counts: { deferred: number } }>('stats')).counts.deferred)
    .toBe(count);

  // ...then both holders are told to flush them now, at the same moment.
  await Promise.all([worker.call('flush', { force: true }), tab.call('flush', { force: true })]);
  await expect.poll(() => tab.total(), { timeout: 20_000 }).toBe(0);

  const stats = await server.stats(user);
  expect(stats.effects).toBe(count);
  expect(Object.keys(stats.effectsByKey).sort()).toEqual([...ids].sort());
  expect(Object.values(stats.effectsByKey).every((n) => n === 1)).toBe(true);
  const sends = requests.keyCounts();
  // Each key: one turned-away attempt and one that went through, never more (G2).
  expect(ids.every((id) => sends[id] === 2)).toBe(true);

  // The tab logs its page sender's events and hears the worker's broadcast.
  const claims = (await tab.events<WorkerEvent>()).filter(
    (event) => event.type === 'claimed' && event.fence === 2,
  );
  expect(claims.map((event) => event.id).sort()).toEqual([...ids].sort());
});
