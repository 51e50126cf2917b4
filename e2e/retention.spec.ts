import { expect, test } from './support/fixtures.ts';
import { ReferenceServer } from './support/server.ts';

const DAY = 24 * 60 * 60 * 1000;

/**
 * SPEC §15 "A key is only safe while the server remembers it", in Chromium with the real worker:
 * a create whose answer never came back, found eight days later (the worker's clock moved ahead),
 * is not resent under its key: the receipt lookup is asked, and the server, which still
 * remembers the key, answers with the stored 201 — the row settles as applied, one note, and no
 * request of it leaves after the clock moved.
 */
test('a key older than the retention allows is not resent: the receipt lookup settles it as applied', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ sw: { timeout: '1000', lease: '3000' } });
  // The create commits; its answer is held past the worker's timeout: the outcome is unknown.
  await server.fault({
    kind: 'delay',
    phase: 'after-commit',
    ms: 30_000,
    route: 'POST /api/notes',
    user,
    count: 1,
  });
  const id = await app.createNote('once');
  await expect.poll(() => requests.writes().filter((entry) => entry.key === id).length).toBe(1);
  // Signed out while it waits (no resend of a young key meanwhile: the row waits held, §13).
  expect((await app.call('setAuth', null)).ok).toBe(true);
  await expect.poll(async () => (await app.storedRow(id))?.state, { timeout: 10_000 }).toBe('held');
  expect((await app.storedRow(id))?.evidence).toMatchObject({ mayHaveApplied: true });

  // The device sleeps eight days; the server's ledger (7 days, not swept yet) still has the key.
  await app.evaluate(
    (ms) => new BroadcastChannel('e2e-control').postMessage({ type: 'clock', aheadMs: ms }),
    8 * DAY,
  );
  const before = requests.writes().filter((entry) => entry.key === id).length;
  expect((await app.login(user)).ok).toBe(true);
  await app.flushUntilEmpty();
  await server.release(user);

  expect(requests.writes().filter((entry) => entry.key === id)).toHaveLength(before);
  const receipt = await app.value<{ status: number; serverId: string }>('receipt', id);
  expect(receipt.status).toBe(201);
  const notes = await server.notes(user);
  expect(notes).toHaveLength(1);
  expect(receipt.serverId).toBe(notes[0]!.id);
  expect((await server.stats(user)).effects).toBe(1);
});

test('a key the server forgot is not resent: the row is blocked retention_exceeded, one note; discard lets it go', async ({
  openApp,
  user,
  requests,
}) => {
  // A server of its own: forgetting every key must touch no other test's.
  const own = await ReferenceServer.start();
  try {
    const app = await openApp({ baseURL: own.url, sw: { timeout: '1000', lease: '3000' } });
    await own.fault({
      kind: 'delay',
      phase: 'after-commit',
      ms: 30_000,
      route: 'POST /api/notes',
      user,
      count: 1,
    });
    const id = await app.createNote('once');
    await expect.poll(() => requests.writes().filter((entry) => entry.key === id).length).toBe(1);
    expect((await app.call('setAuth', null)).ok).toBe(true);
    await expect
      .poll(async () => (await app.storedRow(id))?.state, { timeout: 10_000 })
      .toBe('held');
    await own.release(user);

    // Eight days later: the worker's clock moved, the server's sweep forgot the key.
    await app.evaluate(
      (ms) => new BroadcastChannel('e2e-control').postMessage({ type: 'clock', aheadMs: ms }),
      8 * DAY,
    );
    expect(await own.forgetKeys()).toBeGreaterThan(0);
    const before = requests.writes().filter((entry) => entry.key === id).length;
    expect((await app.login(user)).ok).toBe(true);
    await app.call('flush', { force: true });
    await expect
      .poll(async () => (await app.storedRow(id))?.blockedCode, { timeout: 10_000 })
      .toBe('retention_exceeded');
    expect((await app.storedRow(id))?.evidence).toMatchObject({ mayHaveApplied: true });
    expect(requests.writes().filter((entry) => entry.key === id)).toHaveLength(before);
    expect(await own.notes(user)).toHaveLength(1);
    expect((await own.stats(user)).effects).toBe(1);

    expect((await app.call('discard', id)).ok).toBe(true);
    await expect.poll(() => app.total()).toBe(0);
    expect(await own.notes(user)).toHaveLength(1);
  } finally {
    await own.stop();
  }
});
