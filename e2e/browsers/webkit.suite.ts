import { expect } from '@playwright/test';
import { perWorker } from '../support/per-worker.ts';
import { note, serverTest } from './fixtures.ts';
import { arrived, effects, GUARANTEES, statuses, type View } from './guarantees.ts';
import { running } from './live-views.ts';
import type { Profile } from './profile.ts';
import { STALL } from './stall.ts';
import { Display, WebKitProfile } from './webkit.ts';

/**
 * The guarantees in WebKitGTK (Safari's engine, SPEC §21) under WebKitWebDriver on an Xvfb
 * display. One display per Playwright worker; each test gets its own driver and session, which
 * is a private in-memory profile.
 */
const test = serverTest.extend<{ profile: Profile }, { display: Display }>({
  display: perWorker(
    () => Display.start(),
    (display) => display.stop(),
  ),
  profile: async ({ display, server }, use) => {
    const profile = await WebKitProfile.create(display, server.url);
    await use(profile);
    await profile.close();
  },
});

for (const scenario of [...GUARANTEES, STALL]) {
  test(scenario.name, ({ profile, server, user }) => {
    const reason = scenario.skip?.webkit;
    test.skip(reason !== undefined, reason);
    return scenario.run({ profile, server, user, note });
  });
}

test('a tab closed while the server holds its worker’s request: WebKit cuts the request 10 s later, and the next visit resends the same key for one effect (SPEC §4, G1, G2)', async ({
  profile,
  server,
  user,
}) => {
  // A lease (and so a request timeout) far longer than WebKit's 10 s, so the cut is the browser's
  // and not the request timeout, with room for a loaded machine to be late.
  const params = { owner: user, login: { user, persist: true }, sw: { lease: '40000' } };
  const app = await profile.open(params);
  await server.fault({ kind: 'delay', ms: 60_000, route: 'POST /api/notes', user, count: 1 });
  const id = await app.createNote('cut off');
  await arrived({ server, user }, id);
  await app.close();
  const closed = Date.now();

  // With no page left WebKit stops the worker after 10 s, even inside waitUntil: the request
  // it is still waiting on is aborted.
  await expect
    .poll(async () => statuses(await server.sends(user, id)), { timeout: 35_000 })
    .toEqual(['aborted']);
  const [cut] = await server.sends(user, id);
  const after = cut!.endedAt! - closed;
  note('request cut after the last page left', `${after} ms`);
  expect(after).toBeGreaterThan(8000);
  // Seen at 10–20 s; the request timeout would end it at 40 s.
  expect(after).toBeLessThan(32_000);

  // The server goes on and commits it: an effect nobody heard of.
  expect(await server.release(user)).toBe(1);
  await expect.poll(async () => (await effects({ server, user }))[id]).toBe(1);

  // The next visit starts a new instance; once the dead holder's lease is over it takes the row
  // over and resends the same key and bytes, and the server answers from its ledger.
  const again = await profile.open(params);
  await again.flushUntilEmpty(45_000);
  const sends = await server.sends(user, id);
  expect(statuses(sends)).toEqual(['aborted', 201]);
  expect(sends[1]!.digest).toBe(sends[0]!.digest);
  const stats = await server.stats(user);
  expect(stats.effectsByKey).toEqual({ [id]: 1 });
  expect(stats.replays).toBe(1);
});

test('WebKit keeps the worker running while a page of its origin stays open, even one it does not control: that page’s live view stays on the first instance past the 10 s cut', async ({
  profile,
  server,
  user,
}) => {
  const params = { owner: user, login: { user, persist: true }, sw: { heartbeat: '100' } };
  const inside = await profile.open(params);

  // Outside the worker's scope and no page sender: it talks to the registration's active worker.
  const outside = await profile.open({ ...params, path: '/outside/' });
  expect([await outside.mode(), await outside.controlled()]).toEqual(['worker', false]);
  await outside.subscribe();
  await expect.poll(async () => Object.keys(await outside.heartbeats()).length).toBe(1);
  const [holder] = Object.keys(await outside.heartbeats());

  // The worker's last client leaves; 12 s later the same instance still runs.
  await inside.close();
  const closed = Date.now();
  await expect
    .poll(async () => (await running(outside, holder!)) && Date.now() - closed > 12_000, {
      timeout: 20_000,
      intervals: [500],
    })
    .toBe(true);
  expect(await running(outside, holder!)).toBe(true);

  const id = await outside.createNote('still the first instance');
  await expect.poll(async () => (await effects({ server, user }))[id]).toBe(1);
  await expect.poll(async () => (await outside.snapshots<View>()).at(-1)).toEqual([]);
  const settlers = (await outside.events<{ type: string; id?: string; holder: string }>())
    .filter((event) => event.type === 'settled' && event.id === id)
    .map((event) => event.holder);
  expect(settlers).toEqual([holder]);
  expect(Object.keys(await outside.heartbeats())).toEqual([holder]);
  note(
    'stopped idle worker',
    'not while a page of its origin is open (12 s after its last client left)',
  );
});
