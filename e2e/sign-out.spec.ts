import { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';

/**
 * SPEC §13 "Sign-out holds, never downgrades", in Chromium with the real worker: a signed-out
 * owner's queued row waits held while another owner signs in with a cookie session on the same
 * device; nothing of it reaches the server until its own owner signs in again.
 */
test('a signed-out owner’s queued row waits held while another signs in with a cookie session, then goes once under its own token', async ({
  openApp,
  server,
  user,
  requests,
  context,
  baseURL,
}) => {
  const app = await openApp();
  // The first attempt is refused (503, retry in an hour): the row is queued, nothing applied.
  await server.fault({
    kind: 'unavailable',
    status: 503,
    retryAfter: 3600,
    route: 'POST /api/notes',
    user,
    count: 1,
  });
  const id = await app.createNote('only mine');
  await expect
    .poll(async () => (await app.storedRow(id))?.evidence)
    .toMatchObject({ lastErrorCode: 'http_503' });

  // Sign-out; another owner signs in on the same device with the cookie session.
  expect((await app.call('setAuth', null)).ok).toBe(true);
  const other = await AppPage.open(context, baseURL!, { owner: `${user}-other` });
  expect((await other.call('setAuth', {})).ok).toBe(true);
  await app.call('flush', { force: true });
  await expect.poll(async () => (await app.storedRow(id))?.state).toBe('held');
  expect(requests.writes().filter((entry) => entry.key === id)).toHaveLength(1);
  expect(requests.writes().filter((entry) => !entry.authorized)).toEqual([]);

  // The owner signs in again: its row goes once, with its own token.
  expect((await app.login(user)).ok).toBe(true);
  await app.flushUntilEmpty();
  const sent = requests.writes().filter((entry) => entry.key === id);
  expect(sent).toHaveLength(2);
  expect(sent.every((entry) => entry.authorized)).toBe(true);
  expect(await server.notes(user)).toHaveLength(1);
  expect((await server.stats(user)).effects).toBe(1);
});
