import { deferredCreate } from './support/deferred.ts';
import { expect, test } from './support/fixtures.ts';

interface View {
  id: string;
  status: string;
  row: { state: string; blockedCode?: string; blockedDetail?: string };
}

test('a 401 holds the row until the app re-authenticates and calls resumeHeld, then it is sent', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  await server.expireToken(user);

  const id = await app.createNote('after login');
  await expect
    .poll(async () => (await app.value<View | undefined>('row', id))?.status)
    .toBe('held');
  expect((await server.stats(user)).effects).toBe(0);

  expect((await app.login(user)).ok).toBe(true);
  expect(await app.value('resumeHeld')).toBe(1);
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  await expect.poll(() => app.total()).toBe(0);
});

test('a worker restarted without the page’s token gets it again from the page when it announces its start, and the row goes with it without a call', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  // The token is handed over in worker memory only (no `persist`).
  const app = await openApp({ timeoutMs: 1000 });
  const workers = await app.controlWorkers();
  const id = await deferredCreate(app, server, user, 'kept for later');

  // The browser stops the worker; a push starts a new one that forces a flush with no token of
  // its own. The page hears the new instance announce itself, reconnects and hands the token
  // over again (SPEC §13.1): the row goes, and the page made no call.
  await workers.stopAll();
  await workers.push(JSON.stringify({ type: 'sw-outbox.flush' }));
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  // Never sent anonymously: the turned-away attempt and the one that went, both with the token.
  expect(
    requests
      .writes()
      .filter((entry) => entry.key === id)
      .map((entry) => entry.authorized),
  ).toEqual([true, true]);
  // The push's run reports `flushed` once its loop is done, which is after the server applied the
  // row: wait for it rather than read the log at the moment of the effect.
  await expect
    .poll(async () => {
      const events = await app.events<{ type: string; trigger?: string }>();
      return events.some((event) => event.type === 'flushed' && event.trigger === 'push');
    })
    .toBe(true);
  await expect.poll(() => app.total()).toBe(0);
});

test('a permanent rejection blocks the row with its reason visible through subscribe, and retry and discard act on it', async ({
  context,
  openApp,
  server,
  user,
}) => {
  // The server turns the first create away with 403 once; a retry goes through.
  let refused = false;
  await context.route('**/api/notes', async (route) => {
    if (route.request().method() !== 'POST' || refused) return route.fallback();
    refused = true;
    await route.fulfill({
      status: 403,
      contentType: 'application/problem+json',
      body: JSON.stringify({
        type: 'forbidden',
        title: 'Forbidden',
        status: 403,
        detail: 'not today',
      }),
    });
  });
  const app = await openApp();
  await app.subscribe();

  const first = await app.createNote('retry me');
  const blockedIn = async (id: string) => {
    const latest = (await app.snapshots<View>()).at(-1) ?? [];
    return latest.find((view) => view.id === id);
  };
  await expect.poll(async () => (await blockedIn(first))?.status).toBe('blocked');
  const blocked = (await blockedIn(first))!;
  expect(blocked.row.blockedCode).toBe('http_403');
  expect(blocked.row.blockedDetail).toContain('not today');

  await app.value('retry', first);
  await expect.poll(async () => (await server.stats(user)).effectsByKey[first]).toBe(1);

  // A body the server rejects as invalid (422) is blocked too; discard removes it for good.
  const second = await app.createNote(42);
  await expect.poll(async () => (await blockedIn(second))?.row.blockedCode).toBe('http_422');
  expect((await blockedIn(second))!.row.blockedDetail).toContain('validation-failed');
  await app.value('discard', second);
  await expect.poll(async () => (await app.snapshots<View>()).at(-1)).toEqual([]);
  expect((await server.stats(user)).effects).toBe(1);
});
