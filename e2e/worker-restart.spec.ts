import { expect, test } from './support/fixtures.ts';
import type { WorkerEvent } from './support/worker-events.ts';

const TIMEOUT_MS = 1000;

test('a worker stopped mid-send is replaced by a new holder that takes over after the lease with the next fence, and the page reconnects', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ persist: true, timeoutMs: TIMEOUT_MS, sw: { lease: '1500' } });
  const workers = await app.controlWorkers();
  await app.subscribe();
  const held = requests.hold((entry) => entry.method === 'POST' && entry.from === 'worker');

  const id = await app.createNote('survivor');
  await held.reached;
  await workers.stopAll();
  held.release();

  // The old port is dead: the next call must reconnect, not hang (G7).
  const started = Date.now();
  const stats = await app.call('stats');
  expect(stats.ok).toBe(true);
  expect(Date.now() - started).toBeLessThan(2 * TIMEOUT_MS + 1000);

  // After the lease the new worker instance claims the row with fence 2 and sends the same key.
  await app.flushUntilEmpty();
  expect((await server.stats(user)).effectsByKey).toEqual({ [id]: 1 });
  // The subscription died with the old worker; after the reconnect it was made again, so the
  // page hears the new worker settle the row.
  await expect.poll(async () => (await app.snapshots()).at(-1)).toEqual([]);
  expect((await app.snapshots()).some((rows) => rows.length === 1)).toBe(true);

  const claims = (await app.events<WorkerEvent>()).filter(
    (event) => event.type === 'claimed' && event.id === id,
  );
  expect(claims.map((event) => event.fence)).toEqual([1, 2]);
  expect(claims[0]!.holder).not.toBe(claims[1]!.holder);
  expect(requests.writes().every((entry) => entry.key === id)).toBe(true);
});
