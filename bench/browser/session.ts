import type { Worker } from 'playwright-core';
import type { OutboxWorkerOptions } from './app/protocol.ts';
import { type Profile, serviceWorker } from './chromium.ts';
import type { BenchServer } from './server.ts';

/**
 * What every browser measurement shares (SPEC §19). Each runs in its own fresh persistent
 * profile against one shared reference server; every queue writes as its own user, so the
 * server's per-user effects counter belongs to exactly one measurement.
 */

export type System = 'outbox' | 'workbox';

/** How our outbox sends: batches through the advertised endpoint, or one request per row. */
export type SendMode = 'batches' | 'single';

/** The worker variant of each send mode (`outboxWorkerUrl`). */
export const SEND_MODE_WORKER: Record<SendMode, OutboxWorkerOptions> = {
  batches: {},
  single: { batch: false },
};

let userSeq = 0;
const RUN = Date.now().toString(36);
/** A user no other measurement writes as. */
export const freshUser = (label: string) => `bench-${RUN}-${++userSeq}-${label}`;

/** Registers our worker (the variant `options` names) for `user` and hands it that user's token. */
export async function connectOutbox(
  server: BenchServer,
  profile: Profile,
  user: string,
  options: OutboxWorkerOptions = {},
): Promise<Worker> {
  // A scratch override for every outbox worker of a run (`bench/README.md`): one lever, before
  // and after.
  const plans = process.env.BENCH_PLANS_PER_COMMIT;
  if (plans !== undefined && options.plansPerCommit === undefined)
    options = { ...options, plansPerCommit: Number(plans) };
  await profile.call(
    (bench, [owner, o]: [string, OutboxWorkerOptions]) => bench.connectOutbox(owner, o),
    [user, options],
  );
  const token = await server.token(user);
  await profile.call((bench, t: string) => bench.setAuth(t), token);
  return serviceWorker(profile.context);
}

/** Registers the Workbox worker. */
export async function connectWorkbox(profile: Profile): Promise<Worker> {
  await profile.call((bench) => bench.connectWorkbox());
  return serviceWorker(profile.context);
}

export const perSecond = (rows: number, ms: number) => Math.round((rows * 1000) / ms);

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
