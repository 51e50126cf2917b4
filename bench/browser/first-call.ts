import type { CDPSession } from 'playwright-core';
import { withProfile } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser } from './session.ts';
import { percentile } from './stats.ts';

/**
 * The first page call after the browser stopped the worker (SPEC §13.1, §19), beside calls to a
 * live worker. Each sample: a few `stats()` calls to the running worker, then CDP
 * `ServiceWorker.stopWorker` (what an idle stop does to the page's port), waiting until the
 * browser reports the version stopped, then one `stats()` timed in the page. That call meets a
 * dead port: it is answered once its ping has started a new instance, which opened its store and
 * answered a new handshake. The page keeps a live view open throughout, as an app with an outbox
 * panel would, so every restart also re-subscribes it.
 */

export interface FirstCallResult {
  samples: number;
  live: { p50Ms: number; p99Ms: number; maxMs: number };
  afterStop: { p50Ms: number; p99Ms: number; maxMs: number };
  /** After-stop calls that took as long as the call timeout (5 s): a reconnect by timeout. */
  timedOut: number;
  /** Every after-stop call, ms, in the order measured. */
  afterStopMs: number[];
}

const LIVE_CALLS_PER_SAMPLE = 5;
const TIMEOUT_MS = 5000;

interface Version {
  versionId: string;
  runningStatus: string;
}

const summary = (values: number[]) => ({
  p50Ms: percentile(values, 50),
  p99Ms: percentile(values, 99),
  maxMs: Math.round(Math.max(...values) * 100) / 100,
});

export async function measureFirstCall(
  server: BenchServer,
  options: { samples: number },
): Promise<FirstCallResult> {
  return withProfile(server.url, async (profile) => {
    await connectOutbox(server, profile, freshUser('first-call'));
    await profile.call((bench) => bench.outboxSubscribe());
    const cdp = await profile.context.newCDPSession(profile.page);
    const versions = new Map<string, Version>();
    cdp.on('ServiceWorker.workerVersionUpdated', (event: { versions: Version[] }) => {
      for (const version of event.versions) versions.set(version.versionId, version);
    });
    await cdp.send('ServiceWorker.enable');

    const live: number[] = [];
    const afterStop: number[] = [];
    for (let sample = 0; sample < options.samples; sample++) {
      for (let i = 0; i < LIVE_CALLS_PER_SAMPLE; i++) {
        live.push(await profile.call((bench) => bench.outboxTimedStats()));
      }
      await stopRunningWorker(cdp, versions);
      afterStop.push(await profile.call((bench) => bench.outboxTimedStats()));
    }
    await cdp.detach();
    return {
      samples: options.samples,
      live: summary(live),
      afterStop: summary(afterStop),
      timedOut: afterStop.filter((ms) => ms >= TIMEOUT_MS).length,
      afterStopMs: afterStop.map((ms) => Math.round(ms * 10) / 10),
    };
  });
}

/** Stops the running version and waits until the browser reports it stopped. */
async function stopRunningWorker(cdp: CDPSession, versions: Map<string, Version>): Promise<void> {
  const running = async () => {
    for (let i = 0; i < 200; i++) {
      const found = [...versions.values()].find((v) => v.runningStatus === 'running');
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('no running service-worker version');
  };
  const { versionId } = await running();
  await cdp.send('ServiceWorker.stopWorker', { versionId });
  for (let i = 0; i < 500 && versions.get(versionId)?.runningStatus !== 'stopped'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (versions.get(versionId)?.runningStatus !== 'stopped')
    throw new Error(`version ${versionId} did not stop`);
}
