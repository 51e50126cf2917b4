import { expect, test } from './support/fixtures.ts';
import { type LoggedRequest, ReferenceServer } from './support/server.ts';

/**
 * Batches (SPEC §15.1) in Chromium against the reference server: a queue of offline edits
 * drains in a few requests, a batch answer lost after the server committed is resent with the
 * same keys and answered from the ledger, and a server without the endpoint gets one request
 * per row. Counted at the server, whose request log shows each batch and its items.
 */

/** The batch requests in a server log, each with its items' entries. */
function batchesIn(log: LoggedRequest[]): Array<{ batch: LoggedRequest; items: LoggedRequest[] }> {
  return log
    .filter((entry) => entry.route === '/sync/batch')
    .map((batch) => ({ batch, items: log.filter((entry) => entry.batch === batch.seq) }));
}

test('edits made offline drain in batches once the network is back: several items per request, one effect each', async ({
  context,
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ persist: true });
  // The first answer carries the server's Link: from then on the worker knows its endpoint.
  await app.createNote('first');
  await expect.poll(async () => (await server.stats(user)).effects).toBe(1);

  await context.setOffline(true);
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push(await app.createNote(`offline ${i}`));
  await context.setOffline(false);
  await expect.poll(async () => (await server.stats(user)).effects, { timeout: 20_000 }).toBe(31);

  const stats = await server.stats(user);
  expect(ids.map((id) => stats.effectsByKey[id])).toEqual(ids.map(() => 1));
  const log = await server.requests(user);
  // Each edit went out once, and all of them in a few requests: batches of several items.
  const writes = log.filter((entry) => entry.key !== undefined && ids.includes(entry.key));
  expect(writes.map((entry) => entry.key).sort()).toEqual([...ids].sort());
  const batches = batchesIn(log);
  const alone = writes.filter((entry) => entry.batch === undefined);
  expect(batches.length + alone.length).toBeLessThanOrEqual(4);
  expect(Math.max(...batches.map(({ items }) => items.length))).toBeGreaterThanOrEqual(10);
  for (const { batch, items } of batches) {
    expect(batch.status).toBe(200);
    expect(batch.items).toBe(items.length);
    expect(items.every((item) => item.status === 201)).toBe(true);
  }
  await expect.poll(() => app.total()).toBe(0);
});

test('a batch answer lost after the server committed is resent with the same keys and bytes, and answered from the ledger: one effect each', async ({
  context,
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ persist: true, sw: { batch: '/sync/batch', lease: '1500' } });
  await context.setOffline(true);
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push(await app.createNote(`held ${i}`));
  // The batch commits, then its answer is held past the lease: the worker gives up on it
  // without an answer, as on a lost one (a delay rather than a reset: Chromium resends a POST
  // by itself after a reset, which would hide the outbox's own resend).
  await server.fault({
    kind: 'delay',
    ms: 6000,
    phase: 'after-commit',
    route: 'POST /sync/batch',
    user,
    count: 1,
  });
  await context.setOffline(false);
  await expect.poll(() => app.total(), { timeout: 30_000 }).toBe(0);

  const stats = await server.stats(user);
  expect(stats.effects).toBe(4);
  expect(ids.map((id) => stats.effectsByKey[id])).toEqual([1, 1, 1, 1]);
  const log = await server.requests(user);
  const batches = batchesIn(log);
  // The batch whose answer never came, and the rows it carried.
  const lost = batches.filter(({ batch }) => batch.status === undefined);
  expect(lost).toHaveLength(1);
  const lostKeys = lost[0]!.items.map((item) => item.key!);
  expect(lostKeys.length).toBeGreaterThanOrEqual(2);
  // Each was sent again (alone or in a batch) with its one key and the same bytes, and the
  // ledger answered.
  for (const key of lostKeys) {
    const copies = log.filter((entry) => entry.key === key);
    expect(copies.length).toBeGreaterThanOrEqual(2);
    expect(new Set(copies.map((item) => item.digest)).size).toBe(1);
    expect(copies.at(-1)!.status).toBe(201);
  }
  expect(stats.replays).toBeGreaterThanOrEqual(lostKeys.length);
});

test('a server without a batch endpoint gets one request per row, the client remembers it, and nothing is lost', async ({
  context,
  openApp,
  user,
  requests,
}) => {
  const plain = await ReferenceServer.start(['--no-batch']);
  try {
    const app = await openApp({ baseURL: plain.url, persist: true, sw: { batch: '/sync/batch' } });
    await context.setOffline(true);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await app.createNote(`alone ${i}`));
    await context.setOffline(false);
    await expect.poll(async () => (await plain.stats(user)).effects, { timeout: 20_000 }).toBe(3);
    for (let i = 3; i < 6; i++) ids.push(await app.createNote(`alone ${i}`));
    await expect.poll(async () => (await plain.stats(user)).effects, { timeout: 20_000 }).toBe(6);

    // One batch tried and refused with 404, never again; every row went alone, once.
    expect(requests.batches).toHaveLength(1);
    const alone = requests.writes().filter((entry) => entry.batch === undefined);
    expect(alone.map((entry) => entry.key).sort()).toEqual([...ids].sort());
    expect(alone.every((entry) => entry.path === '/api/notes')).toBe(true);
    const stats = await plain.stats(user);
    expect(ids.map((id) => stats.effectsByKey[id])).toEqual(ids.map(() => 1));
    await expect.poll(() => app.total()).toBe(0);
  } finally {
    await plain.stop();
  }
});
