import { expect } from '@playwright/test';
import type { BrowserTab } from './profile.ts';

/**
 * Watching worker instances come and go from a page, for the browsers whose workers the test
 * cannot stop or list (SPEC §13.1). The e2e worker started with `heartbeat=<ms>` says it is alive
 * on a BroadcastChannel; a timer is not an event, so the heartbeat keeps no worker alive, and
 * reading it sends the worker nothing (which would start it again).
 */

/** How long without a heartbeat means the instance was stopped (beats come every 100 ms). */
const SILENCE_MS = 1500;

/** Waits until a worker instance other than `except` has stopped; returns its holder id. */
export async function stoppedInstance(
  tab: BrowserTab,
  except: string[] = [],
  timeout = 30_000,
): Promise<{ holder: string; lastBeat: number }> {
  let found: { holder: string; lastBeat: number } | undefined;
  await expect
    .poll(
      async () => {
        const beats = await tab.heartbeats();
        const now = Date.now();
        const silent = Object.entries(beats).find(
          ([holder, at]) => !except.includes(holder) && now - at > SILENCE_MS,
        );
        found = silent && { holder: silent[0], lastBeat: silent[1] };
        return found !== undefined;
      },
      { timeout, intervals: [250] },
    )
    .toBe(true);
  return found!;
}

/** Whether `holder` beat within the last {@link SILENCE_MS}. */
export async function running(tab: BrowserTab, holder: string): Promise<boolean> {
  const at = (await tab.heartbeats())[holder];
  return at !== undefined && Date.now() - at <= SILENCE_MS;
}

/** How long after `at` the tab's live view first showed no rows (Infinity if it never did). */
export async function emptiedAfter(tab: BrowserTab, at: number): Promise<number> {
  const snapshots = await tab.timedSnapshots();
  const empty = snapshots.find((snapshot) => snapshot.at >= at && snapshot.rows.length === 0);
  return empty === undefined ? Number.POSITIVE_INFINITY : empty.at - at;
}
