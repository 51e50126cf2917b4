import type { PageCallTrace, TraceEvent, TraceTx } from './app/protocol.ts';
import { percentile } from './stats.ts';

/**
 * Where each traced enqueue's time went (`--only enqueue-trace`): the page's times of each call
 * matched with the worker's timeline (`app/trace.ts`) by the call's id.
 */

/** The parts of one enqueue, in order; they add up to the page's latency. */
export const PARTS = ['toWorker', 'beforeTx', 'txWait', 'txCommit', 'toAnswer', 'toPage'] as const;
export type Part = (typeof PARTS)[number];

export const PART_LABELS: Record<Part, string> = {
  toWorker: 'page call → worker receives it',
  beforeTx: 'received → transaction opened',
  txWait: 'opened → running (first read back)',
  txCommit: 'running → committed',
  toAnswer: 'committed → answer posted',
  toPage: 'answer posted → page resolves',
};

/** What kind of work a transaction did, told from its stores, mode and rows. */
export type TxKind = 'enqueue' | 'claim' | 'ack' | 'prune' | 'read' | 'meta' | 'other';

export function txKind(tx: TraceTx): TxKind {
  if (tx.mode !== 'readwrite') return 'read';
  if (tx.stores.length === 1 && tx.stores[0] === 'meta') return 'meta';
  if (tx.stores.every((store) => store === 'receipts' || store === 'conflicts')) return 'prune';
  if (tx.puts.some((put) => put.claimed && put.state === 'sending')) return 'claim';
  if (tx.deletes > 0 && tx.stores.includes('receipts')) return 'ack';
  if (tx.stores.includes('tombstones') && tx.puts.some((put) => put.state === 'queued'))
    return 'enqueue';
  return 'other';
}

export interface TracedCall {
  id: string;
  total: number;
  parts: Record<Part, number>;
  /** Transactions of other work that completed while this call's transaction waited to run. */
  ranAhead: Partial<Record<TxKind, number>>;
  /** Worker event-loop stalls overlapping the call, and the longest. */
  stalls: number;
  longestStallMs: number;
  /** Requests in flight when the call started, change notices posted during it. */
  fetchesInFlight: number;
  notices: number;
  /** Other messages and events the worker handled during the call (ping, flush, sync). */
  workerEvents: Record<string, number>;
}

export interface TraceSummary {
  calls: number;
  totals: { p50Ms: number; p99Ms: number; maxMs: number };
  parts: Record<Part, { p50Ms: number; p99Ms: number; maxMs: number }>;
  /** Calls over `slowMs`: how many, their mean parts, and what ran meanwhile. */
  slow: {
    thresholdMs: number;
    calls: number;
    meanParts: Record<Part, number>;
    /** How often each part was the largest of a slow call. */
    largestPart: Partial<Record<Part, number>>;
    ranAheadPerCall: Partial<Record<TxKind, number>>;
    stallsPerCall: number;
    noticesPerCall: number;
  };
  /** Every transaction of the window, by kind: count and duration (open → complete). */
  transactions: Record<string, { count: number; p50Ms: number; p99Ms: number; maxMs: number }>;
  stalls: { count: number; maxMs: number; totalMs: number };
  /** The slowest calls, each with its parts (for the README's reading of a tail). */
  slowest: TracedCall[];
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const summary = (values: number[]) => ({
  p50Ms: percentile(values, 50),
  p99Ms: percentile(values, 99),
  maxMs: round2(Math.max(...values)),
});

/** Matches each page call with its worker events and splits its time into {@link PARTS}. */
export function traceCalls(calls: PageCallTrace[], events: TraceEvent[]): TracedCall[] {
  const callIn = new Map<string, Extract<TraceEvent, { kind: 'call-in' }>>();
  const callOut = new Map<string, number>();
  const enqueueTx = new Map<string, TraceTx>();
  const txs: TraceTx[] = [];
  for (const event of events) {
    if (event.kind === 'call-in' && event.id !== undefined) callIn.set(event.id, event);
    else if (event.kind === 'call-out') callOut.set(event.callId, event.at);
    else if (event.kind === 'tx') {
      txs.push(event);
      if (txKind(event) === 'enqueue') for (const put of event.puts) enqueueTx.set(put.id, event);
    }
  }
  const traced: TracedCall[] = [];
  for (const call of calls) {
    const arrived = callIn.get(call.id);
    const tx = enqueueTx.get(call.id);
    const answered = arrived && callOut.get(arrived.callId);
    if (arrived === undefined || tx === undefined || answered === undefined) continue;
    const running = tx.start ?? tx.end;
    const parts: Record<Part, number> = {
      toWorker: arrived.at - call.start,
      beforeTx: tx.open - arrived.at,
      txWait: running - tx.open,
      txCommit: tx.end - running,
      toAnswer: answered - tx.end,
      toPage: call.end - answered,
    };
    const ranAhead: Partial<Record<TxKind, number>> = {};
    for (const other of txs) {
      if (other === tx || other.end <= tx.open || other.end > running) continue;
      const kind = txKind(other);
      ranAhead[kind] = (ranAhead[kind] ?? 0) + 1;
    }
    let stalls = 0;
    let longestStallMs = 0;
    let fetchesInFlight = 0;
    let notices = 0;
    const workerEvents: Record<string, number> = {};
    for (const event of events) {
      if (event.kind === 'stall' && event.at < call.end && event.at + event.ms > call.start) {
        stalls++;
        longestStallMs = Math.max(longestStallMs, event.ms);
      } else if (event.kind === 'fetch' && event.start <= call.start && event.end > call.start) {
        fetchesInFlight++;
      } else if (event.kind === 'event' && event.at >= call.start && event.at <= call.end) {
        if (event.type === 'notice') notices++;
        else if (!event.type.startsWith('engine:'))
          workerEvents[event.type] = (workerEvents[event.type] ?? 0) + 1;
      }
    }
    traced.push({
      id: call.id,
      total: call.end - call.start,
      parts,
      ranAhead,
      stalls,
      longestStallMs: round2(longestStallMs),
      fetchesInFlight,
      notices,
      workerEvents,
    });
  }
  return traced;
}

/** The summary the bench prints and writes for a traced run. */
export function summarizeTrace(
  calls: PageCallTrace[],
  events: TraceEvent[],
  slowMs: number,
): TraceSummary {
  const traced = traceCalls(calls, events);
  const parts = Object.fromEntries(
    PARTS.map((part) => [part, summary(traced.map((call) => call.parts[part]))]),
  ) as TraceSummary['parts'];
  const slowCalls = traced.filter((call) => call.total > slowMs);
  const per = (sum: number) => round2(sum / Math.max(1, slowCalls.length));
  const meanParts = Object.fromEntries(
    PARTS.map((part) => [part, per(slowCalls.reduce((s, call) => s + call.parts[part], 0))]),
  ) as Record<Part, number>;
  const largestPart: Partial<Record<Part, number>> = {};
  const ranAheadSum: Partial<Record<TxKind, number>> = {};
  for (const call of slowCalls) {
    const largest = PARTS.reduce((a, b) => (call.parts[b] > call.parts[a] ? b : a));
    largestPart[largest] = (largestPart[largest] ?? 0) + 1;
    for (const [kind, n] of Object.entries(call.ranAhead) as [TxKind, number][])
      ranAheadSum[kind] = (ranAheadSum[kind] ?? 0) + n;
  }
  const byKind = new Map<string, number[]>();
  for (const event of events) {
    if (event.kind !== 'tx') continue;
    const kind = `${txKind(event)} (${event.durability})`;
    byKind.set(kind, [...(byKind.get(kind) ?? []), event.end - event.open]);
  }
  const stalls = events.filter((event) => event.kind === 'stall');
  return {
    calls: traced.length,
    totals: summary(traced.map((call) => call.total)),
    parts,
    slow: {
      thresholdMs: slowMs,
      calls: slowCalls.length,
      meanParts,
      largestPart,
      ranAheadPerCall: Object.fromEntries(
        Object.entries(ranAheadSum).map(([kind, n]) => [kind, per(n)]),
      ),
      stallsPerCall: per(slowCalls.reduce((s, call) => s + call.stalls, 0)),
      noticesPerCall: per(slowCalls.reduce((s, call) => s + call.notices, 0)),
    },
    transactions: Object.fromEntries(
      [...byKind].map(([kind, durations]) => [
        kind,
        { count: durations.length, ...summary(durations) },
      ]),
    ),
    stalls: {
      count: stalls.length,
      maxMs: round2(Math.max(0, ...stalls.map((s) => s.ms))),
      totalMs: round2(stalls.reduce((sum, s) => sum + s.ms, 0)),
    },
    slowest: [...traced]
      .sort((a, b) => b.total - a.total)
      .slice(0, 5)
      .map((call) => ({
        ...call,
        total: round2(call.total),
        parts: Object.fromEntries(PARTS.map((part) => [part, round2(call.parts[part])])) as Record<
          Part,
          number
        >,
      })),
  };
}
