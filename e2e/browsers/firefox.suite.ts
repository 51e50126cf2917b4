import { expect } from '@playwright/test';
import type { Browser } from 'puppeteer-core';
import { perWorker } from '../support/per-worker.ts';
import { FirefoxProfile, launchFirefox, SHORT_IDLE_PREFS } from './firefox.ts';
import { note, serverTest } from './fixtures.ts';
import { arrived, effects, GUARANTEES, type View } from './guarantees.ts';
import { emptiedAfter, stoppedInstance } from './live-views.ts';
import type { Profile } from './profile.ts';
import { STALL } from './stall.ts';

/**
 * The guarantees in Firefox ESR (SPEC §21): a real browser without Background Sync, so the
 * fallbacks (flush on worker start, page events, the page sender) are what sends. One Firefox
 * per Playwright worker; each test gets its own browser context (workers and IndexedDB apart).
 */
const test = serverTest.extend<{ profile: Profile }, { firefox: Browser }>({
  firefox: perWorker(
    () => launchFirefox(),
    (browser) => browser.close(),
  ),
  profile: async ({ firefox, server }, use) => {
    const profile = await FirefoxProfile.create(firefox, server.url);
    await use(profile);
    await profile.close();
  },
});

for (const scenario of [...GUARANTEES, STALL]) {
  test(scenario.name, ({ profile, server, user }) => {
    const reason = scenario.skip?.firefox;
    test.skip(reason !== undefined, reason);
    return scenario.run({ profile, server, user, note });
  });
}

test('a worker Firefox stopped for idleness leaves live views live: rows a new instance settles show within a second, and the next call costs one worker start (SPEC §13.1)', async ({
  server,
  user,
}) => {
  // A Firefox of its own that stops a worker 2 s after its last event, as it does after 30 s.
  const browser = await launchFirefox(SHORT_IDLE_PREFS);
  try {
    const profile = await FirefoxProfile.create(browser, server.url);
    const params = { owner: user, login: { user, persist: true }, sw: { heartbeat: '100' } };
    const app = await profile.open(params);
    await app.subscribe();
    await server.fault({
      kind: 'unavailable',
      route: 'POST /api/notes',
      user,
      count: 1,
      retryAfter: 3600,
    });
    const id = await app.createNote('settled by the next instance');
    await arrived({ server, user }, id);
    await expect
      .poll(async () => (await app.snapshots<View>()).at(-1)?.map((view) => view.status))
      .toEqual(['deferred']);
    const first = await stoppedInstance(app);

    // Another page opens: its handshake starts a new instance, and its flush sends the row. The
    // first page made no call; the new instance's start announcement moved its view over.
    const other = await profile.open(params);
    await other.call('flush', { force: true });
    await expect.poll(async () => (await effects({ server, user }))[id]).toBe(1);
    await expect.poll(async () => (await app.snapshots()).at(-1)).toEqual([]);
    const settled = (
      await app.events<{
        type: string;
        id?: string;
        outcome?: string;
        holder: string;
        at: number;
      }>()
    ).find((event) => event.type === 'settled' && event.id === id && event.outcome === 'success')!;
    expect(settled.holder).not.toBe(first.holder);
    const lag = await emptiedAfter(app, settled.at);
    expect(lag).toBeLessThan(1000);

    // Every page but the first closes; the new instance idles out too.
    await other.close();
    const second = await stoppedInstance(app, [first.holder]);
    const call = await app.timed('stats');
    expect(call.ok).toBe(true);
    expect(call.ms).toBeLessThan(1000);
    note('view behind a new instance', `${lag} ms from the settle to the page's view`);
    note('first call after an idle stop', `${Math.round(call.ms)} ms`);
    note(
      'idle stop',
      `${second.holder} stopped; heartbeats ended ${second.lastBeat - settled.at} ms after its settle`,
    );
  } finally {
    await browser.close();
  }
});
