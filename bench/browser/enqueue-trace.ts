import type { PageCallTrace, TraceEvent } from './app/protocol.ts';
import { outboxHooks, withProfile } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser } from './session.ts';
import { percentile } from './stats.ts';
import { summarizeTrace, type TraceSummary } from './trace-analysis.ts';

/**
 * Online enqueue with its drain running, traced (`--only enqueue-trace`): where the tail of the
 * page's latency comes from. One profile runs the worker untraced (the latencies the enqueue
 * table reports), another with `?trace=1` (`app/trace.ts`), whose timeline splits each call into
 * its parts (`trace-analysis.ts`); comparing the two shows what the tracer itself costs.
 */

export interface EnqueueTraceResult {
  calls: number;
  untraced: { p50Ms: number; p99Ms: number; maxMs: number };
  traced: TraceSummary;
  /** The raw timeline and page times, for reading one slow call by hand. */
  raw: { calls: PageCallTrace[]; events: TraceEvent[] };
}

const WARMUP = 20;
/** The enqueue target's p99 (issue 16): calls above it are the tail examined. */
const SLOW_MS = 8;

export async function measureEnqueueTrace(
  server: BenchServer,
  options: { calls: number },
): Promise<EnqueueTraceResult> {
  const untraced = await withProfile(server.url, async (profile) => {
    await connectOutbox(server, profile, freshUser('enqueue-untraced'));
    await profile.call((bench, n: number) => bench.outboxEnqueueTraced(n, 0), WARMUP);
    const calls = await profile.call(
      (bench, [n, from]: [number, number]) => bench.outboxEnqueueTraced(n, from),
      [options.calls, WARMUP],
    );
    const latencies = calls.map((call) => call.end - call.start);
    return {
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: Math.round(Math.max(...latencies) * 100) / 100,
    };
  });
  return withProfile(server.url, async (profile) => {
    const worker = await connectOutbox(server, profile, freshUser('enqueue-traced'), {
      trace: true,
    });
    await profile.call((bench, n: number) => bench.outboxEnqueueTraced(n, 0), WARMUP);
    await outboxHooks(worker, async (hooks) => hooks.trace());
    const calls = await profile.call(
      (bench, [n, from]: [number, number]) => bench.outboxEnqueueTraced(n, from),
      [options.calls, WARMUP],
    );
    const events = await outboxHooks(worker, async (hooks) => hooks.trace());
    return {
      calls: calls.length,
      untraced,
      traced: summarizeTrace(calls, events, SLOW_MS),
      raw: { calls, events },
    };
  });
}
