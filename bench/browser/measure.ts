import type { Worker } from 'playwright-core';
import type { BenchRequest, FirstBatchSample } from './app/protocol.ts';
import { outboxHooks, type Profile, serviceWorker, withProfile, workboxHooks } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { median, percentile } from './stats.ts';

/**
 * The browser measurements of SPEC §19. Each runs in its own fresh persistent profile against
 * one shared reference server; every queue writes as its own user, so the server's per-user
 * effects counter belongs to exactly one measurement.
 */

export type System = 'outbox' | 'workbox';

export interface EnqueueResult {
  system: System;
  /** `offline`: nothing can be sent; `online`: our worker sends while the page enqueues. */
  network: 'offline' | 'online';
  calls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** One call after another: 1000 / mean latency. */
  sequentialPerSecond: number;
  /** With `inFlight` calls outstanding. */
  concurrent: { calls: number; inFlight: number; perSecond: number };
}

export interface DrainResult {
  system: System;
  rows: number;
  latencyMs: number;
  /** How the queue was filled: our engine's own enqueue, or `Queue.pushRequest`, in the worker. */
  fillPerSecond: number;
  /** Effects on the server when the drain ended (all rows, or what the time cap allowed). */
  drained: number;
  seconds: number;
  rowsPerSecond: number;
  complete: boolean;
  /**
   * CPU ms per drained row while draining: the whole browser (every Chromium process) and the
   * server process. Read with the rate on a busy machine: it shows the cost, not just the speed.
   */
  cpuMsPerRow?: { browser: number; server: number };
  /** IndexedDB transactions the worker opened per drained row (ours and Workbox's own idb). */
  transactionsPerRow: { readonly: number; readwrite: number };
}

export interface LossResult {
  system: System;
  rows: number;
  dropRate: number;
  effects: number;
  /** Effects beyond the first for a key: what the server's ledger failed to stop. */
  duplicateEffects: number;
  /** Keys that never took effect. */
  missing: number;
  /** Copies the ledger answered from a stored result: duplicates had it not been there. */
  replays: number;
  seconds: number;
}

export interface FirstBatchResult {
  queued: number;
  firstClaimMs: number;
  batchClaimMs: number;
  flushMs: number;
  samples: FirstBatchSample[];
}

let userSeq = 0;
const RUN = Date.now().toString(36);
/** A user no other measurement writes as. */
const freshUser = (label: string) => `bench-${RUN}-${++userSeq}-${label}`;

async function connectOutbox(server: BenchServer, profile: Profile, user: string) {
  await profile.call((bench, owner: string) => bench.connectOutbox(owner), user);
  const token = await server.token(user);
  await profile.call((bench, t: string) => bench.setAuth(t), token);
  return serviceWorker(profile.context);
}

async function connectWorkbox(profile: Profile) {
  await profile.call((bench) => bench.connectWorkbox());
  return serviceWorker(profile.context);
}

function enqueueResult(
  system: System,
  network: EnqueueResult['network'],
  latencies: number[],
  concurrent: { calls: number; inFlight: number; ms: number },
): EnqueueResult {
  const mean = latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length;
  return {
    system,
    network,
    calls: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.max(...latencies),
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

/**
 * Enqueue latency page → worker → committed, as the page sees it: our page API offline (the
 * worker cannot send) and online (it sends while the page enqueues), and Workbox's
 * `pushRequest` behind the same page → worker message hop, offline.
 */
export async function measureEnqueue(
  server: BenchServer,
  options: { calls: number; concurrentCalls: number },
): Promise<EnqueueResult[]> {
  const { calls, concurrentCalls } = options;
  const results: EnqueueResult[] = [];
  let requests: BenchRequest[] = [];
  for (const network of ['offline', 'online'] as const) {
    await withProfile(
      server.url,
      async (profile) => {
        const user = freshUser(`enqueue-${network}`);
        const worker = await connectOutbox(server, profile, user);
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
          enqueueResult('outbox', network, latencies, {
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
        enqueueResult('workbox', 'offline', latencies, {
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

export interface DrainOptions {
  rows: number;
  latencyMs: number;
  /** Stop waiting after this long and report the rate so far. */
  capSeconds: number;
}

/**
 * Flush throughput, ours then Workbox on the same requests: fill the queue inside the worker
 * while nothing asks it to send (our engine's own `enqueue` does not flush, and the Workbox queue
 * replays only when told), check that the server saw nothing yet, then trigger and time until the
 * server counted the last effect.
 */
export async function measureDrain(
  server: BenchServer,
  options: DrainOptions,
): Promise<[DrainResult, DrainResult]> {
  const { rows, latencyMs } = options;
  let requests: BenchRequest[] = [];
  const ours = await withProfile(server.url, async (profile) => {
    const user = freshUser(`drain-${rows}-${latencyMs}-outbox`);
    const worker = await connectOutbox(server, profile, user);
    const fill = await outboxHooks(
      worker,
      (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0),
      [user, rows],
    );
    requests = await outboxHooks(worker, (hooks, owner: string) => hooks.requests(owner), user);
    if (requests.length !== rows) throw new Error(`filled ${requests.length} of ${rows} rows`);
    const drained = await timeDrain(server, profile, worker, user, options, () =>
      profile.call((bench) => bench.outboxFlush()),
    );
    return {
      system: 'outbox' as const,
      rows,
      latencyMs,
      fillPerSecond: perSecond(rows, fill.ms),
      ...drained,
    };
  });
  const theirs = await withProfile(server.url, async (profile) => {
    const user = freshUser(`drain-${rows}-${latencyMs}-workbox`);
    const authorization = `Bearer ${await server.token(user)}`;
    const worker = await connectWorkbox(profile);
    const fill = await workboxHooks(
      worker,
      (hooks, [r, a]: [BenchRequest[], string]) => hooks.push(r, a),
      [requests, authorization],
    );
    const queued = await workboxHooks(worker, (hooks) => hooks.size());
    if (queued !== rows) throw new Error(`queued ${queued} of ${rows} requests`);
    const drained = await timeDrain(server, profile, worker, user, options, () =>
      profile.call((bench) => bench.workboxReplay(3)),
    );
    return {
      system: 'workbox' as const,
      rows,
      latencyMs,
      fillPerSecond: perSecond(rows, fill.ms),
      ...drained,
    };
  });
  return [ours, theirs];
}

/**
 * Counts the IndexedDB transactions a worker opens from now on, whichever library opens them.
 * A string, not a function: the runner's transpiler may add helpers a worker does not have.
 */
const COUNT_TRANSACTIONS = `(() => {
  const scope = globalThis;
  scope.__benchTransactions = { readonly: 0, readwrite: 0 };
  if (scope.__benchCounting) return;
  scope.__benchCounting = true;
  const open = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    scope.__benchTransactions[mode === 'readwrite' ? 'readwrite' : 'readonly']++;
    return open.call(this, stores, mode, options);
  };
})()`;

const cpuSince = (before: number | undefined, after: number | undefined) =>
  before === undefined || after === undefined ? undefined : after - before;
const perSecond = (rows: number, ms: number) => Math.round((rows * 1000) / ms);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Adds the latency fault for `user`, runs `trigger` and polls the server's effects counter until
 * every row took effect or the cap passed. The end is the poll that first saw the last effect;
 * polls are spaced so that their resolution stays near 1 % of the expected drain.
 */
async function timeDrain(
  server: BenchServer,
  profile: Profile,
  worker: Worker,
  user: string,
  options: DrainOptions,
  trigger: () => Promise<void>,
): Promise<
  Pick<
    DrainResult,
    'drained' | 'seconds' | 'rowsPerSecond' | 'complete' | 'cpuMsPerRow' | 'transactionsPerRow'
  >
> {
  const { rows, latencyMs, capSeconds } = options;
  if ((await server.stats(user)).effects !== 0) throw new Error('rows were sent before the drain');
  if (latencyMs > 0) {
    await server.fault({
      kind: 'delay',
      ms: latencyMs,
      phase: 'before-commit',
      route: 'write',
      user,
    });
  }
  const interval = rows > 2_000 || latencyMs > 0 ? 100 : 25;
  try {
    await worker.evaluate(COUNT_TRANSACTIONS);
    const cpuBefore = { browser: profile.cpuMs(), server: server.cpuMs() };
    const started = performance.now();
    await trigger();
    let effects = 0;
    let at = started;
    for (;;) {
      await sleep(interval);
      const now = performance.now();
      effects = (await server.stats(user)).effects;
      at = now;
      if (effects >= rows || now - started > capSeconds * 1000) break;
    }
    const seconds = (at - started) / 1000;
    const browserCpu = cpuSince(cpuBefore.browser, profile.cpuMs());
    const serverCpu = cpuSince(cpuBefore.server, server.cpuMs());
    const transactions = (await worker.evaluate('globalThis.__benchTransactions')) as {
      readonly: number;
      readwrite: number;
    };
    return {
      drained: effects,
      seconds: round(seconds, 2),
      rowsPerSecond: round(effects / seconds, 1),
      complete: effects >= rows,
      transactionsPerRow: {
        readonly: round(transactions.readonly / Math.max(effects, 1), 2),
        readwrite: round(transactions.readwrite / Math.max(effects, 1), 2),
      },
      ...(browserCpu !== undefined && serverCpu !== undefined && effects > 0
        ? {
            cpuMsPerRow: {
              browser: round(browserCpu / effects, 2),
              server: round(serverCpu / effects, 2),
            },
          }
        : {}),
    };
  } finally {
    await server.clearFaults();
  }
}

/**
 * Duplicate effects under response loss: the server drops `dropRate` of write responses after
 * committing them. Both queues are driven until empty; the server's counter per key says how
 * many effects each request had.
 */
export async function measureLoss(
  server: BenchServer,
  options: { rows: number; dropRate: number },
): Promise<[LossResult, LossResult]> {
  const { rows, dropRate } = options;
  let requests: BenchRequest[] = [];
  const ours = await withProfile(server.url, async (profile) => {
    const user = freshUser('loss-outbox');
    const worker = await connectOutbox(server, profile, user);
    await outboxHooks(worker, (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0), [
      user,
      rows,
    ]);
    requests = await outboxHooks(worker, (hooks, owner: string) => hooks.requests(owner), user);
    return lossRun(server, 'outbox', user, requests, dropRate, async () => {
      await profile.call((bench) => bench.outboxDrain(500));
    });
  });
  const theirs = await withProfile(server.url, async (profile) => {
    const user = freshUser('loss-workbox');
    const authorization = `Bearer ${await server.token(user)}`;
    const worker = await connectWorkbox(profile);
    await workboxHooks(worker, (hooks, [r, a]: [BenchRequest[], string]) => hooks.push(r, a), [
      requests,
      authorization,
    ]);
    return lossRun(server, 'workbox', user, requests, dropRate, async () => {
      await profile.call((bench) => bench.workboxReplay(10_000));
      const done = await profile.call((bench) => bench.workboxReplayDone());
      if (!done.ok) throw new Error(`workbox replay failed: ${done.error}`);
    });
  });
  return [ours, theirs];
}

async function lossRun(
  server: BenchServer,
  system: System,
  user: string,
  requests: BenchRequest[],
  dropRate: number,
  drain: () => Promise<void>,
): Promise<LossResult> {
  await server.fault({ kind: 'drop-after-commit', route: 'write', rate: dropRate, user });
  const started = performance.now();
  try {
    await drain();
  } finally {
    await server.clearFaults();
  }
  const seconds = (performance.now() - started) / 1000;
  const stats = await server.stats(user);
  let duplicateEffects = 0;
  let missing = 0;
  for (const { requestId } of requests) {
    const count = stats.effectsByKey[requestId] ?? 0;
    if (count === 0) missing++;
    else duplicateEffects += count - 1;
  }
  return {
    system,
    rows: requests.length,
    dropRate,
    effects: stats.effects,
    duplicateEffects,
    missing,
    replays: stats.replays,
    seconds: round(seconds, 2),
  };
}

/**
 * Time to select and claim the first batch, with `sizes[0]` rows queued and then with the queue
 * grown to each later size: rows are copied straight into IndexedDB in big transactions, then
 * forced flushes run offline, so each one selects and claims the head of the queue, fails its
 * sends at once and leaves the queue as it was.
 */
export async function measureFirstBatch(
  server: BenchServer,
  options: { sizes: number[]; reps: number },
): Promise<FirstBatchResult[]> {
  return withProfile(
    server.url,
    async (profile) => {
      const user = freshUser('first-batch');
      const worker = await connectOutbox(server, profile, user);
      await profile.context.setOffline(true);
      await outboxHooks(worker, (hooks, owner: string) => hooks.fill(owner, 1, 0), user);
      const results: FirstBatchResult[] = [];
      let queued = 1;
      for (const size of options.sizes) {
        const seeded = await outboxHooks(
          worker,
          (hooks, [owner, n]: [string, number]) => hooks.seed(owner, n),
          [user, size - queued],
        );
        queued = seeded.total;
        if (queued !== size) throw new Error(`seeded ${queued} rows, wanted ${size}`);
        const samples = await outboxHooks(
          worker,
          (hooks, [owner, reps]: [string, number]) => hooks.firstBatch(owner, reps),
          [user, options.reps],
        );
        results.push({
          queued,
          firstClaimMs: round(median(samples.map((s) => s.firstClaimMs)), 2),
          batchClaimMs: round(median(samples.map((s) => s.batchClaimMs)), 2),
          flushMs: round(median(samples.map((s) => s.flushMs)), 2),
          samples,
        });
      }
      return results;
    },
    { offlineCapable: true },
  );
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
