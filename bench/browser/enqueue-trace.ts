import type { OutboxWorkerOptions, PageCallTrace, TraceEvent } from './app/protocol.ts';
import { outboxHooks, withProfile } from './chromium.ts';
import { startChromiumTrace } from './chromium-trace.ts';
import { threadTimesSince } from './cpu.ts';
import { type FsyncSummary, startFsyncProbe } from './fsync-probe.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser, round } from './session.ts';
import { percentile } from './stats.ts';
import { summarizeTrace, type TraceSummary } from './trace-analysis.ts';

/**
 * Online enqueue with its drain running, traced (`--only enqueue-trace`): where the tail of the
 * page's latency comes from. First the same sequential loop on worker variants, each in its own
 * profile: as shipped (batches with the default linger), without linger, one request per row,
 * every request answered inside the worker (the drain without network or server), strict
 * commits made relaxed (without the sync to disk), and no drain at all; per variant the run and
 * run-queue wait time of every thread, and a probe of the disk's own sync. Then a profile with
 * `?trace=1` (`app/trace.ts`) and a Chromium trace (`chromium-trace.ts`), whose timelines split
 * each call into its parts (`trace-analysis.ts`); the shipped variant's numbers beside it show
 * what the tracer itself costs.
 */

/** Run and run-queue wait time per call of one group of threads (`cpu.ts`), ms. */
export interface ThreadCost {
  group: string;
  runMs: number;
  waitMs: number;
}

export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** p99 of each successive block of 100 calls: whether the tail grows as the run goes on. */
  p99ByHundred: number[];
  /** Per call, the threads of the browser and the server that ran most, and their waits. */
  threads: ThreadCost[];
  /** Per call, all of the browser's and the server's threads together. */
  threadTotal: { runMs: number; waitMs: number };
  /** The disk meanwhile (`fsync-probe.ts`). */
  fsync: FsyncSummary;
}

export interface EnqueueTraceResult {
  calls: number;
  variants: Array<{ label: string; options: OutboxWorkerOptions } & LatencySummary>;
  traced: TraceSummary;
  /** The raw timeline and page times, for reading one slow call by hand. */
  raw: { calls: PageCallTrace[]; events: TraceEvent[] };
}

const WARMUP = 20;

const VARIANTS: Array<{ label: string; worker: OutboxWorkerOptions }> = [
  { label: 'as shipped (batches, linger 5 ms)', worker: {} },
  { label: 'batches, no linger', worker: { lingerMs: 0 } },
  { label: 'batches, linger 25 ms', worker: { lingerMs: 25 } },
  { label: 'one request per row', worker: { batch: false } },
  { label: 'requests answered in the worker', worker: { stubFetch: true } },
  { label: 'strict commits relaxed (not durable)', worker: { relaxed: true } },
  { label: 'no drain (flush and sync kept out)', worker: { flush: false } },
];

function latencySummary(
  latencies: number[],
): Omit<LatencySummary, 'threads' | 'threadTotal' | 'fsync'> {
  const p99ByHundred: number[] = [];
  for (let at = 0; at < latencies.length; at += 100)
    p99ByHundred.push(percentile(latencies.slice(at, at + 100), 99));
  return {
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: Math.round(Math.max(...latencies) * 100) / 100,
    p99ByHundred,
  };
}

/** The enqueue target's p99: calls above it are the tail examined. */
const SLOW_MS = 8;

export async function measureEnqueueTrace(
  server: BenchServer,
  options: { calls: number },
): Promise<EnqueueTraceResult> {
  const variants: EnqueueTraceResult['variants'] = [];
  for (const { label, worker } of VARIANTS) {
    const measured = await withProfile(server.url, async (profile) => {
      await connectOutbox(server, profile, freshUser('enqueue-variant'), worker);
      await profile.call((bench, n: number) => bench.outboxEnqueueTraced(n, 0), WARMUP);
      const before = [...profile.threads(), ...server.threads()];
      const stopProbe = await startFsyncProbe();
      const calls = await profile.call(
        (bench, [n, from]: [number, number]) => bench.outboxEnqueueTraced(n, from),
        [options.calls, WARMUP],
      );
      const fsync = await stopProbe();
      const spent = threadTimesSince(before, [...profile.threads(), ...server.threads()]);
      return { latencies: calls.map((call) => call.end - call.start), spent, fsync };
    });
    const { latencies, spent, fsync } = measured;
    const perCall = (ms: number) => round(ms / latencies.length, 3);
    variants.push({
      label,
      options: worker,
      ...latencySummary(latencies),
      threads: spent
        .filter((t) => t.runMs / latencies.length >= 0.05)
        .map((t) => ({ group: t.group, runMs: perCall(t.runMs), waitMs: perCall(t.waitMs) })),
      threadTotal: {
        runMs: perCall(spent.reduce((sum, t) => sum + t.runMs, 0)),
        waitMs: perCall(spent.reduce((sum, t) => sum + t.waitMs, 0)),
      },
      fsync,
    });
  }
  return withProfile(server.url, async (profile) => {
    const worker = await connectOutbox(server, profile, freshUser('enqueue-traced'), {
      trace: true,
    });
    await profile.call((bench, n: number) => bench.outboxEnqueueTraced(n, 0), WARMUP);
    const stopTrace = await startChromiumTrace(profile.page);
    await outboxHooks(worker, async (hooks) => hooks.trace());
    const calls = await profile.call(
      (bench, [n, from]: [number, number]) => bench.outboxEnqueueTraced(n, from),
      [options.calls, WARMUP],
    );
    const events = await outboxHooks(worker, async (hooks) => hooks.trace());
    const chromium = await stopTrace();
    return {
      calls: calls.length,
      variants,
      traced: summarizeTrace(calls, events, SLOW_MS, chromium),
      raw: { calls, events },
    };
  });
}
