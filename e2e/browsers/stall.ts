import { expect } from '@playwright/test';
import { fromWorker } from '../support/server.ts';
import { arrived, effects, type Scenario } from './guarantees.ts';

/**
 * SPEC §23 in a browser without Background Sync (Firefox, WebKit): the worker's wake-up timer is
 * lost while a row is due, and no sync event will come for it. The watchdog sees that nothing
 * ran since the row became due, within its bound, flushes itself, and the row goes, once. The
 * same stall as Chromium's `e2e/watchdog.spec.ts`, healed the same way; the timer is released
 * through the test worker's control channel, since no test can run code inside these workers.
 */

const STALL_MS = 5000;
/** The backoff's cap in the test worker (e2e/app/sw.ts). */
const BACKOFF_CAP_MS = 2000;

interface Logged {
  type: string;
  trigger?: string;
  cause?: string;
  action?: string;
  at: number;
}

export const STALL: Scenario = {
  name: 'a lost wake-up timer with a due row and no Background Sync is seen and healed within the watchdog’s bound: the row goes once (SPEC §23)',
  async run(t) {
    const { server, user } = t;
    const app = await t.profile.open({
      owner: user,
      login: { user, persist: true },
      sw: { stall: String(STALL_MS) },
    });
    await server.fault({ kind: 'unavailable', route: 'POST /api/notes', user, retryAfter: 1 });
    const id = await app.createNote('stalled');
    await arrived(t, id);

    // The wake-up timer goes. A run still in flight then arms a new one: release again until no
    // run comes for longer than the backoff's cap, well inside the bound.
    const flushes = async () =>
      (await app.events<Logged>()).filter((event) => event.type === 'flushed').length;
    const release = () =>
      app.evaluate(
        () => new BroadcastChannel('e2e-control').postMessage({ type: 'release-wake' }),
        undefined,
      );
    let released = false;
    for (let i = 0; i < 5 && !released; i++) {
      await release();
      const before = await flushes();
      const quietSince = Date.now();
      // Polled, not slept: any run within the cap ends this round early.
      released = await expect
        .poll(
          async () => (await flushes()) > before || Date.now() - quietSince > BACKOFF_CAP_MS + 500,
          {
            intervals: [100],
          },
        )
        .toBe(true)
        .then(async () => (await flushes()) === before);
    }
    expect(released).toBe(true);
    const attempts = (await server.sends(user, id)).length;
    await server.clearFaults(user);
    const cleared = Date.now();

    await expect.poll(async () => (await effects(t))[id], { timeout: 20_000 }).toBe(1);
    const sentAfter = Date.now() - cleared;
    // Due within the server's Retry-After (1 s) or the backoff's cap, then the bound.
    expect(sentAfter).toBeLessThan(BACKOFF_CAP_MS + STALL_MS + 2000);

    const events = await app.events<Logged>();
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'stalled', cause: 'not_attempted', action: 'healed' }),
    );
    const healing = events.find(
      (event) => event.type === 'flushed' && event.trigger === 'watchdog',
    );
    expect(healing).toBeDefined();
    // Nothing sent the row between the release and the watchdog's flush.
    const sends = await server.sends(user, id);
    expect(sends.length).toBe(attempts + 1);
    expect(sends.at(-1)).toMatchObject({ status: 201 });
    expect(sends.every(fromWorker)).toBe(true);
    await expect.poll(() => app.total()).toBe(0);
    expect(await effects(t)).toEqual({ [id]: 1 });
    t.note(
      'stall healed',
      `sent ${sentAfter} ms after the server recovered (bound ${STALL_MS} ms)`,
    );
  },
};
