import { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';
import type { WorkerEvent } from './support/worker-events.ts';

test.describe('without service workers', () => {
  test.use({ serviceWorkers: 'block' });

  test('a page with no controlling worker syncs through the page sender', async ({
    context,
    baseURL,
    server,
    user,
    requests,
  }) => {
    const app = await AppPage.open(context, baseURL!, {
      owner: user,
      login: user,
      pageSender: true,
    });
    expect(await app.mode()).toBe('page');
    const id = await app.createNote('tab');
    await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
    await expect.poll(async () => (await app.value<{ total: number }>('stats')).total).toBe(0);
    expect(requests.writes().map((entry) => entry.from)).toEqual(['page']);
  });
});

test('the page sender hands over to the worker once it controls the page', async ({
  context,
  baseURL,
  server,
  user,
  requests,
}) => {
  const app = await AppPage.open(context, baseURL!, { owner: user, login: user, pageSender: true });
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
  const worker = await AppPage.open(context, baseURL!, {
    owner: user,
    login: user,
    sw: { lease: '10000' },
  });
  // Out of the worker's scope: never controlled, so it runs the page sender on the same database.
  // It registers the same worker script: another URL would install a new worker mid-test.
  const tab = await AppPage.open(context, baseURL!, {
    path: '/outside/',
    owner: user,
    login: user,
    pageSender: true,
    sw: { lease: '10000' },
    leaseMs: 10_000,
  });
  expect(await tab.mode()).toBe('page');
  expect(await worker.mode()).toBe('worker');

  // Every first attempt is turned away with a long Retry-After, so all rows wait deferred...
  await server.fault({
    kind: 'unavailable',
    route: 'POST /api/notes',
    user,
    count,
    retryAfter: 3600,
  });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(await tab.createNote(`n${i}`));
  }
  await expect
    .poll(async () => (await tab.value<{ counts: { deferred: number } }>('stats')).counts.deferred)
    .toBe(count);

  // ...then both holders are told to flush them now, at the same moment.
  await Promise.all([worker.call('flush', { force: true }), tab.call('flush', { force: true })]);
  await expect
    .poll(async () => (await tab.value<{ total: number }>('stats')).total, { timeout: 20_000 })
    .toBe(0);

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
