import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'playwright-core';
import type { BenchRequest } from './app/protocol.ts';
import { outboxHooks, type Profile, withProfile, workboxHooks } from './chromium.ts';
import { type CpuSplit, cpuSplit, threadTimesSince } from './cpu.ts';
import type { BenchServer } from './server.ts';
import {
  connectOutbox,
  connectWorkbox,
  freshUser,
  perSecond,
  round,
  SEND_MODE_WORKER,
  type SendMode,
  type System,
} from './session.ts';

export interface DrainResult {
  system: System;
  /** Ours only: how it sent. */
  mode?: SendMode;
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
  /** The browser's CPU ms per drained row by thread (`cpuSplit`; undefined without /proc). */
  cpuByThread?: CpuSplit;
  /** IndexedDB transactions the worker opened per drained row (ours and Workbox's own idb). */
  transactionsPerRow: { readonly: number; readwrite: number };
  /** IndexedDB requests (get, put, delete, count, cursor steps, …) per drained row. */
  requestsPerRow: number;
  /** Batch requests the server ran (SPEC §15.1); 0 for one request per row. */
  batches: number;
  /**
   * Rows applied over time: each poll of the server's effects counter as `[seconds since the
   * trigger, effects]`, from `[0, 0]` to the poll that ended the drain (the drain's chart).
   */
  progress: ProgressSample[];
}

/** One poll of a drain: seconds since the trigger, effects the server had counted by then. */
export type ProgressSample = readonly [seconds: number, applied: number];

/** One drain measured three ways in one run: our batches, our single requests, Workbox. */
export interface DrainComparison {
  batches: DrainResult;
  single: DrainResult;
  workbox: DrainResult;
  /** Rows/s of ours over Workbox's in the same run. */
  ratios: { batches: number; single: number };
}

export interface DrainOptions {
  rows: number;
  latencyMs: number;
  /** Stop waiting after this long and report the rate so far. */
  capSeconds: number;
}

/**
 * Flush throughput, ours (one request per row, then batches) and Workbox on the same requests,
 * each in its own profile: fill the queue inside the worker while nothing asks it to send (our
 * engine's own `enqueue` does not flush, and the Workbox queue replays only when told), check
 * that the server saw nothing yet, then trigger and time until the server counted the last
 * effect.
 */
export async function measureDrain(
  server: BenchServer,
  options: DrainOptions,
): Promise<DrainComparison> {
  const { rows, latencyMs } = options;
  const { result: single, requests } = await drainOutbox(server, options, 'single', false);
  const { result: batches } = await drainOutbox(server, options, 'batches', false);
  const workbox = await withProfile(server.url, async (profile) => {
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
    const drained = await timeDrain(server, profile, worker, user, options, undefined, () =>
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
  const ratio = (ours: DrainResult) =>
    Math.round((ours.rowsPerSecond / workbox.rowsPerSecond) * 100) / 100;
  return { batches, single, workbox, ratios: { batches: ratio(batches), single: ratio(single) } };
}

/**
 * Our drain twice in one run: without, then with an unfiltered live view (`subscribe`) open in
 * the page, as an app's outbox panel would have: what watching the outbox costs the flush.
 */
export async function measureLiveViewDrain(
  server: BenchServer,
  options: DrainOptions,
  mode: SendMode,
): Promise<[DrainResult, DrainResult]> {
  const without = await drainOutbox(server, options, mode, false);
  const watched = await drainOutbox(server, options, mode, true);
  return [without.result, watched.result];
}

/** Fills our worker's outbox with `rows` creates and times their drain. */
async function drainOutbox(
  server: BenchServer,
  options: DrainOptions,
  mode: SendMode,
  liveView: boolean,
): Promise<{ result: DrainResult; requests: BenchRequest[] }> {
  const { rows, latencyMs } = options;
  return withProfile(server.url, async (profile) => {
    const user = freshUser(`drain-${rows}-${latencyMs}-${mode}${liveView ? '-live' : ''}`);
    const worker = await connectOutbox(server, profile, user, SEND_MODE_WORKER[mode]);
    const fill = await outboxHooks(
      worker,
      (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0),
      [user, rows],
    );
    const requests = await outboxHooks(
      worker,
      (hooks, owner: string) => hooks.requests(owner),
      user,
    );
    if (requests.length !== rows) throw new Error(`filled ${requests.length} of ${rows} rows`);
    if (liveView) {
      await profile.call((bench) => bench.outboxSubscribe());
      await until(
        async () => (await profile.call((bench) => bench.outboxSnapshots())).rows === rows,
      );
    }
    const drained = await timeDrain(server, profile, worker, user, options, mode, () =>
      profile.call((bench) => bench.outboxFlush()),
    );
    if (liveView) {
      await until(async () => (await profile.call((bench) => bench.outboxSnapshots())).rows === 0);
    }
    const result: DrainResult = {
      system: 'outbox',
      mode,
      rows,
      latencyMs,
      fillPerSecond: perSecond(rows, fill.ms),
      ...drained,
    };
    return { result, requests };
  });
}

/** Polls `condition` every 25 ms for up to a minute. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  for (const started = performance.now(); performance.now() - started < 60_000; ) {
    if (await condition()) return;
    await sleep(25);
  }
  throw new Error('the live view never caught up');
}

/**
 * Counts the IndexedDB transactions a worker opens from now on, whichever library opens them.
 * A string, not a function: the runner's transpiler may add helpers a worker does not have.
 */
const COUNT_TRANSACTIONS = `(() => {
  const scope = globalThis;
  scope.__benchTransactions = { readonly: 0, readwrite: 0, requests: 0 };
  if (scope.__benchCounting) return;
  scope.__benchCounting = true;
  const open = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (stores, mode, options) {
    scope.__benchTransactions[mode === 'readwrite' ? 'readwrite' : 'readonly']++;
    return open.call(this, stores, mode, options);
  };
  const methods = ['get', 'getAll', 'getAllKeys', 'getKey', 'count', 'put', 'add', 'delete',
    'clear', 'openCursor', 'openKeyCursor'];
  for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype]) {
    for (const method of methods) {
      const original = proto[method];
      if (typeof original !== 'function') continue;
      proto[method] = function (...args) {
        scope.__benchTransactions.requests++;
        return original.apply(this, args);
      };
    }
  }
  const step = IDBCursor.prototype.continue;
  IDBCursor.prototype.continue = function (...args) {
    scope.__benchTransactions.requests++;
    return step.apply(this, args);
  };
})()`;

const cpuSince = (before: number | undefined, after: number | undefined) =>
  before === undefined || after === undefined ? undefined : after - before;

/**
 * Adds the latency fault for `user`, runs `trigger` and polls the server's effects counter until
 * every row took effect or the cap passed. The end is the poll that first saw the last effect;
 * polls are spaced so that their resolution stays near 1 % of the expected drain (batches drain
 * in about a second: polled every 25 ms), and rarely enough that the server's CPU per row is
 * not the polls'.
 */
async function timeDrain(
  server: BenchServer,
  profile: Profile,
  worker: Worker,
  user: string,
  options: DrainOptions,
  mode: SendMode | undefined,
  trigger: () => Promise<void>,
): Promise<
  Pick<
    DrainResult,
    | 'drained'
    | 'seconds'
    | 'rowsPerSecond'
    | 'complete'
    | 'cpuMsPerRow'
    | 'cpuByThread'
    | 'transactionsPerRow'
    | 'requestsPerRow'
    | 'batches'
    | 'progress'
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
  const interval = mode !== 'batches' && (rows > 2_000 || latencyMs > 0) ? 100 : 25;
  try {
    await worker.evaluate(COUNT_TRANSACTIONS);
    const cpuBefore = { browser: profile.cpuMs(), server: server.cpuMs() };
    const threadsBefore = profile.threads();
    const started = performance.now();
    await trigger();
    let effects = 0;
    let batches = 0;
    let at = started;
    const progress: ProgressSample[] = [[0, 0]];
    for (;;) {
      await sleep(interval);
      const now = performance.now();
      ({ effects, batches } = await server.stats(user));
      at = now;
      progress.push([round((now - started) / 1000, 3), effects]);
      if (effects >= rows || now - started > capSeconds * 1000) break;
    }
    const seconds = (at - started) / 1000;
    const browserCpu = cpuSince(cpuBefore.browser, profile.cpuMs());
    const threads = threadTimesSince(threadsBefore, profile.threads());
    const serverCpu = cpuSince(cpuBefore.server, server.cpuMs());
    const transactions = (await worker.evaluate('globalThis.__benchTransactions')) as {
      readonly: number;
      readwrite: number;
      requests: number;
    };
    return {
      drained: effects,
      seconds: round(seconds, 2),
      rowsPerSecond: round(effects / seconds, 1),
      complete: effects >= rows,
      batches,
      transactionsPerRow: {
        readonly: round(transactions.readonly / Math.max(effects, 1), 2),
        readwrite: round(transactions.readwrite / Math.max(effects, 1), 2),
      },
      requestsPerRow: round(transactions.requests / Math.max(effects, 1), 2),
      progress,
      ...(threads.length > 0 && effects > 0 ? { cpuByThread: cpuSplit(threads, effects) } : {}),
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
