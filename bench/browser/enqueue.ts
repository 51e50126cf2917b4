import type { BenchRequest, OutboxWorkerOptions } from './app/protocol.ts';
import { outboxHooks, withProfile } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, connectWorkbox, freshUser, type System } from './session.ts';
import { percentile } from './stats.ts';

export interface EnqueueResult {
  system: System;
  /** `offline`: nothing can be sent; `online`: our worker sends while the page enqueues. */
  network: 'offline' | 'online';
  /** How our worker sends meanwhile (online): `batches`, `batches, no linger`, `single`. */
  variant?: string;
  calls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** One call after another: 1000 / mean latency. */
  sequentialPerSecond: number;
  /** With `inFlight` calls outstanding. */
  concurrent: { calls: number; inFlight: number; perSecond: number };
}

function enqueueResult(
  system: System,
  network: EnqueueResult['network'],
  variant: string | undefined,
  latencies: number[],
  concurrent: { calls: number; inFlight: number; ms: number },
): EnqueueResult {
  const mean = latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length;
  return {
    system,
    network,
    ...(variant === undefined ? {} : { variant }),
    calls: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.round(Math.max(...latencies) * 100) / 100,
    sequentialPerSecond: Math.round(1000 / mean),
    concurrent: {
      calls: concurrent.calls,
      inFlight: concurrent.inFlight,
      perSecond: Math.round((concurrent.calls * 1000) / concurrent.ms),
    },
  };
}

const WARMUP = 20;
const IN_FLIGHT = 16;

/** Our worker offline, then online three ways: batches with and without linger, single requests. */
const OUTBOX_RUNS: Array<{
  network: EnqueueResult['network'];
  variant?: string;
  worker: OutboxWorkerOptions;
}> = [
  { network: 'offline', worker: {} },
  { network: 'online', variant: 'batches', worker: {} },
  { network: 'online', variant: 'batches, no linger', worker: { lingerMs: 0 } },
  // Every claim and ACK the drain has gathered in one transaction, as before `plansPerCommit`.
  { network: 'online', variant: 'batches, commits unbounded', worker: { plansPerCommit: 1e9 } },
  { network: 'online', variant: 'single', worker: { batch: false } },
];

/**
 * Enqueue latency page → worker → committed, as the page sees it: our page API offline (the
 * worker cannot send) and online (it sends while the page enqueues: in batches, in batches with
 * no linger, one request per row), and Workbox's `pushRequest` behind the same page → worker
 * message hop, offline.
 */
export async function measureEnqueue(
  server: BenchServer,
  options: { calls: number; concurrentCalls: number },
): Promise<EnqueueResult[]> {
  const { calls, concurrentCalls } = options;
  const results: EnqueueResult[] = [];
  let requests: BenchRequest[] = [];
  for (const { network, variant, worker: options } of OUTBOX_RUNS) {
    await withProfile(
      server.url,
      async (profile) => {
        const user = freshUser(`enqueue-${network}`);
        const worker = await connectOutbox(server, profile, user, options);
        if (network === 'offline') await profile.context.setOffline(true);
        await profile.call((bench, n: number) => bench.outboxEnqueueLatency(n, 0), WARMUP);
        const latencies = await profile.call(
          (bench, n: number) => bench.outboxEnqueueLatency(n, 1_000_000),
          calls,
        );
        const ms = await profile.call(
          (bench, [n, width]: [number, number]) => bench.outboxEnqueueRate(n, width, 2_000_000),
          [concurrentCalls, IN_FLIGHT],
        );
        results.push(
          enqueueResult('outbox', network, variant, latencies, {
            calls: concurrentCalls,
            inFlight: IN_FLIGHT,
            ms,
          }),
        );
        if (network === 'offline')
          requests = await outboxHooks(
            worker,
            (hooks, owner: string) => hooks.requests(owner),
            user,
          );
      },
      { offlineCapable: network === 'offline' },
    );
  }
  await withProfile(
    server.url,
    async (profile) => {
      const authorization = `Bearer ${await server.token(freshUser('enqueue-workbox'))}`;
      await connectWorkbox(profile);
      await profile.context.setOffline(true);
      const warm = requests.slice(0, WARMUP);
      const timed = requests.slice(WARMUP, WARMUP + calls);
      const rest = requests.slice(WARMUP + calls, WARMUP + calls + concurrentCalls);
      await profile.call(
        (bench, [r, a]: [BenchRequest[], string]) => bench.workboxEnqueueLatency(r, a),
        [warm, authorization],
      );
      const latencies = await profile.call(
        (bench, [r, a]: [BenchRequest[], string]) => bench.workboxEnqueueLatency(r, a),
        [timed, authorization],
      );
      const ms = await profile.call(
        (bench, [r, a, width]: [BenchRequest[], string, number]) =>
          bench.workboxEnqueueRate(r, a, width),
        [rest, authorization, IN_FLIGHT],
      );
      results.push(
        enqueueResult('workbox', 'offline', undefined, latencies, {
          calls: rest.length,
          inFlight: IN_FLIGHT,
          ms,
        }),
      );
    },
    { offlineCapable: true },
  );
  return results;
}
