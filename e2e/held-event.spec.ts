import type { OutboxHeld } from '../client/index.ts';
import type { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';
import type { ReferenceServer } from './support/server.ts';

/**
 * SPEC §23 (and issue 26's honest Workbox switch): a row held for want of credentials is
 * visible to the page at once — an `outbox-held` event on `window` and `health()` naming `held` —
 * not only as a failed fetch or a row status nobody watches. Measured from the server's 401 to
 * the event, for a page a worker serves and for the page sender.
 */

type Heard = OutboxHeld & { at: number };

const helds = (app: AppPage) =>
  app.page.evaluate(() => (globalThis as unknown as { e2e: { helds: Heard[] } }).e2e.helds);

async function holdAndResume(app: AppPage, server: ReferenceServer, user: string) {
  await server.expireToken(user);
  const id = await app.createNote('held at once');
  await expect.poll(() => helds(app)).toHaveLength(1);
  const [heard] = await helds(app);
  expect(heard).toMatchObject({ owner: user, ids: [id], reason: 'held' });
  // The page's next health() names the cause: no interval, no watchdog bound in between.
  expect(await app.value('health')).toMatchObject({ stalled: 'held', counts: { held: 1 } });
  const [refused] = await server.sends(user, id);
  expect(refused).toMatchObject({ status: 401 });
  // From the refused request's arrival at the server (its answer is logged once the socket is
  // done, which can be after the page has it).
  const lag = heard!.at - refused!.at;
  expect(lag).toBeLessThan(1000);

  // Signed in again and resumed: sent once, healthy, and no second event.
  expect((await app.login(user)).ok).toBe(true);
  expect(await app.value('resumeHeld')).toBe(1);
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
  await expect
    .poll(async () => (await app.value<{ stalled: unknown }>('health')).stalled)
    .toBe(null);
  expect(await helds(app)).toHaveLength(1);
  return lag;
}

test('a row a worker held for credentials raises outbox-held on the page at once, and health() names it', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();
  expect(await app.mode()).toBe('worker');
  const lag = await holdAndResume(app, server, user);
  console.log(`outbox-held (worker): ${lag} ms after the refused request reached the server`);
});

test('a row the page sender held for credentials raises outbox-held at once, and health() names it', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp({ path: '/outside/', pageSender: true });
  expect(await app.mode()).toBe('page');
  const lag = await holdAndResume(app, server, user);
  console.log(`outbox-held (page sender): ${lag} ms after the refused request reached the server`);
});
