import type { PageCallTrace, TraceEvent, TraceTx } from './app/protocol.ts';
import type { BackendTx, ChromiumTrace } from './chromium-trace.ts';
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
  /** From the Chromium trace: the enqueue's transaction in the IndexedDB backend, GC pauses. */
  backend?: {
    /** `transaction()` called → the backend registered it (IPC, the backend's thread). */
    toBackendMs: number;
    /** Registered → its first operation ran: queued in the backend. */
    queuedMs: number;
    /**
     * The part of `queuedMs` in which another transaction was running in the backend (the
     * enqueue waits behind it: Chromium runs read-write transactions over one store one at a
     * time); the rest of the queue is the backend's thread waiting to run at all.
     */
    blockedMs: number;
    /** The backend's commit (LevelDB write and sync), wall and CPU. */
    commitMs: number;
    commitCpuMs: number;
  };
  /** GC pauses on the worker's and the page's threads during the call, ms. */
  gcMs?: number;
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
  transactions: Record<
    string,
    {
      count: number;
      p50Ms: number;
      p99Ms: number;
      maxMs: number;
      /** The backend's commit of these (Chromium trace): wall p50/p99/max, ms. */
      commit?: { p50Ms: number; p99Ms: number; maxMs: number };
    }
  >;
  stalls: { count: number; maxMs: number; totalMs: number };
  /** From the Chromium trace, when one was recorded: the enqueue transactions in the backend. */
  backend?: {
    matched: number;
    all: BackendParts;
    slow: BackendParts;
    /** GC pauses on the worker's and the page's threads in the whole window. */
    gc: { count: number; maxMs: number; totalMs: number };
    /** Slow calls that a GC pause overlapped. */
    slowWithGc: number;
  };
  /** The slowest calls, each with its parts (for the README's reading of a tail). */
  slowest: TracedCall[];
}

/** p50/p99/max of each backend part of the enqueue transactions of a set of calls, ms. */
export type BackendParts = Record<
  'toBackendMs' | 'queuedMs' | 'blockedMs' | 'commitMs' | 'commitCpuMs',
  { p50Ms: number; p99Ms: number; maxMs: number; meanMs: number }
>;

const round2 = (value: number) => Math.round(value * 100) / 100;

function backendParts(calls: TracedCall[]): BackendParts {
  const keys = ['toBackendMs', 'queuedMs', 'blockedMs', 'commitMs', 'commitCpuMs'] as const;
  const parts = {} as BackendParts;
  for (const key of keys) {
    const values = calls.flatMap((call) => (call.backend ? [call.backend[key]] : []));
    parts[key] = {
      ...summary(values),
      meanMs: round2(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)),
    };
  }
  return parts;
}
const summary = (values: number[]) => ({
  p50Ms: percentile(values, 50),
  p99Ms: percentile(values, 99),
  maxMs: round2(Math.max(...values)),
});

/**
 * Pairs the worker's transactions with the backend's by their `complete` dispatch: the tracer's
 * `complete` listener runs inside `IDBTransaction::onComplete`. The two clocks (the worker's
 * `timeOrigin + now()` and the trace's, joined at one mark) may disagree by a constant of about
 * a millisecond, so the median distance to the nearest dispatch is taken out first; then each
 * worker transaction takes the nearest unpaired dispatch within a millisecond and a half.
 */
function pairWithBackend(
  txs: TraceTx[],
  backend: BackendTx[],
): { pairs: Map<TraceTx, BackendTx>; offset: number } {
  const dispatched = backend
    .filter((b) => b.completeStart !== undefined)
    .sort((a, b) => a.completeStart! - b.completeStart!);
  const starts = dispatched.map((b) => b.completeStart!);
  const nearest = (at: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && Math.abs(starts[lo - 1]! - at) < Math.abs(starts[lo]! - at)) return lo - 1;
    return lo;
  };
  const pairs = new Map<TraceTx, BackendTx>();
  if (starts.length === 0) return { pairs, offset: 0 };
  const offsets = txs.map((tx) => tx.end - starts[nearest(tx.end)]!).sort((a, b) => a - b);
  const offset = offsets[offsets.length >> 1] ?? 0;
  const used = new Set<number>();
  for (const tx of txs) {
    const at = tx.end - offset;
    const index = nearest(at);
    if (used.has(index) || Math.abs(starts[index]! - at) > 1.5) continue;
    used.add(index);
    pairs.set(tx, dispatched[index]!);
  }
  return { pairs, offset };
}

/** How much of `[from, to]` the running spans of the other backend transactions cover, ms. */
function coveredBy(from: number, to: number, self: BackendTx, all: BackendTx[]): number {
  const spans = all
    .filter((t) => t !== self && t.firstOperation !== undefined && t.commitStart !== undefined)
    .map((t) => [
      Math.max(from, t.firstOperation!),
      Math.min(to, t.commitStart! + (t.commitMs ?? 0)),
    ])
    .filter(([a, b]) => b! > a!)
    .sort((x, y) => x[0]! - y[0]!);
  let covered = 0;
  let reach = from;
  for (const [a, b] of spans) {
    if (b! <= reach) continue;
    covered += b! - Math.max(a!, reach);
    reach = b!;
  }
  return covered;
}

/** Matches each page call with its worker events and splits its time into {@link PARTS}. */
export function traceCalls(
  calls: PageCallTrace[],
  events: TraceEvent[],
  chromium?: ChromiumTrace,
): TracedCall[] {
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
  // `offset` turns a trace time into the worker's clock.
  const { pairs: paired, offset } = chromium
    ? pairWithBackend(txs, chromium.transactions)
    : { pairs: new Map<TraceTx, BackendTx>(), offset: 0 };
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
    const backend = paired.get(tx);
    const gcMs = chromium?.gc
      .filter((pause) => pause.at + offset < call.end && pause.at + offset + pause.ms > call.start)
      .reduce((sum, pause) => sum + pause.ms, 0);
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
      ...(backend?.firstOperation !== undefined && backend.commitMs !== undefined
        ? {
            backend: {
              toBackendMs: backend.registered + offset - tx.open,
              queuedMs: backend.firstOperation - backend.registered,
              blockedMs: coveredBy(
                backend.registered,
                backend.firstOperation,
                backend,
                chromium?.transactions ?? [],
              ),
              commitMs: backend.commitMs,
              commitCpuMs: backend.commitCpuMs ?? 0,
            },
          }
        : {}),
      ...(gcMs === undefined ? {} : { gcMs }),
    });
  }
  return traced;
}

/** The summary the bench prints and writes for a traced run. */
export function summarizeTrace(
  calls: PageCallTrace[],
  events: TraceEvent[],
  slowMs: number,
  chromium?: ChromiumTrace,
): TraceSummary {
  const traced = traceCalls(calls, events, chromium);
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
  const commitsByKind = new Map<string, number[]>();
  const txs = events.filter((event): event is TraceTx => event.kind === 'tx');
  const { pairs } = chromium
    ? pairWithBackend(txs, chromium.transactions)
    : { pairs: new Map<TraceTx, BackendTx>() };
  for (const tx of txs) {
    const kind = `${txKind(tx)} (${tx.durability})`;
    byKind.set(kind, [...(byKind.get(kind) ?? []), tx.end - tx.open]);
    const commitMs = pairs.get(tx)?.commitMs;
    if (commitMs !== undefined)
      commitsByKind.set(kind, [...(commitsByKind.get(kind) ?? []), commitMs]);
  }
  const stalls = events.filter((event) => event.kind === 'stall');
  const first = calls[0]?.start ?? 0;
  const last = calls[calls.length - 1]?.end ?? 0;
  const gc = chromium?.gc.filter((pause) => pause.at >= first && pause.at <= last) ?? [];
  const backend: TraceSummary['backend'] =
    chromium === undefined
      ? undefined
      : {
          matched: traced.filter((call) => call.backend !== undefined).length,
          all: backendParts(traced),
          slow: backendParts(slowCalls),
          gc: {
            count: gc.length,
            maxMs: round2(Math.max(0, ...gc.map((pause) => pause.ms))),
            totalMs: round2(gc.reduce((sum, pause) => sum + pause.ms, 0)),
          },
          slowWithGc: slowCalls.filter((call) => (call.gcMs ?? 0) > 0).length,
        };
  return {
    ...(backend === undefined ? {} : { backend }),
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
      [...byKind].map(([kind, durations]) => {
        const commits = commitsByKind.get(kind);
        return [
          kind,
          {
            count: durations.length,
            ...summary(durations),
            ...(commits === undefined ? {} : { commit: summary(commits) }),
          },
        ];
      }),
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
        ...(call.backend
          ? {
              backend: {
                toBackendMs: round2(call.backend.toBackendMs),
                queuedMs: round2(call.backend.queuedMs),
                blockedMs: round2(call.backend.blockedMs),
                commitMs: round2(call.backend.commitMs),
                commitCpuMs: round2(call.backend.commitCpuMs),
              },
            }
          : {}),
        ...(call.gcMs === undefined ? {} : { gcMs: round2(call.gcMs) }),
        parts: Object.fromEntries(PARTS.map((part) => [part, round2(call.parts[part])])) as Record<
          Part,
          number
        >,
      })),
  };
}
