import { expect, test } from './support/fixtures.ts';

test('a response dropped after commit is retried with the same key and bytes and the server applies it once', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp();
  await server.fault({ kind: 'drop-after-commit', route: 'POST /api/notes', user, count: 1 });

  const id = await app.createNote('once');
  await expect.poll(() => app.total()).toBe(0);

  const stats = await server.stats(user);
  expect(stats.effects).toBe(1);
  expect(stats.effectsByKey).toEqual({ [id]: 1 });
  // The retry was answered from the ledger (a replay), not applied again (G2).
  expect(stats.replays).toBeGreaterThanOrEqual(1);
  const sent = requests.writes().filter((entry) => entry.key === id);
  expect(sent.length).toBeGreaterThanOrEqual(1);
  expect(new Set(sent.map((entry) => entry.body)).size).toBe(1);
  expect(await server.notes(user)).toHaveLength(1);
  const receipt = await app.value<{ status: number; serverId: string }>('receipt', id);
  expect(receipt.status).toBe(201);
  expect(receipt.serverId).toBe((await server.notes(user))[0]!.id);
});
