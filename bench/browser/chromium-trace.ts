import type { Page } from 'playwright-core';

/**
 * A Chromium trace of one traced enqueue run (`--only enqueue-trace`), recorded over the page's
 * DevTools session (it covers every process: the worker's thread, the page's, the browser's
 * IndexedDB backend) and reduced to what the analysis needs: each IndexedDB transaction's life
 * in the backend and the V8 collections on the page's and the worker's threads. Only the
 * `IndexedDB` and `v8.gc` categories are on, so the trace costs little beside the run itself.
 *
 * Trace times are monotonic microseconds; the worker's tracer leaves a `bench-clock <ms>` mark
 * with its own clock (`timeOrigin + now()`), which gives the offset to the page and worker times.
 */

/** One transaction as the IndexedDB backend ran it; times in the page's clock, ms. */
export interface BackendTx {
  txnId: number;
  /** The backend registered it (the worker's `transaction()` call arrived). */
  registered: number;
  /** Its first operation ran: everything before it is waiting behind other transactions. */
  firstOperation?: number;
  /** `DoPendingCommit`: the backend's commit, LevelDB's write and, if strict, its sync. */
  commitStart?: number;
  commitMs?: number;
  commitCpuMs?: number;
  /** The worker's `complete` dispatch (`IDBTransaction::onComplete`). */
  completeStart?: number;
  completeEnd?: number;
}

/** One V8 collection pause on the page's or the worker's thread. */
export interface GcPause {
  thread: 'worker' | 'page';
  kind: string;
  at: number;
  ms: number;
}

export interface ChromiumTrace {
  transactions: BackendTx[];
  gc: GcPause[];
}

const CATEGORIES = ['IndexedDB', 'disabled-by-default-v8.gc', 'blink.user_timing', '__metadata'];
const GC_PAUSES = new Set([
  'V8.GC_SCAVENGER',
  'V8.GC_MINOR_MARK_SWEEPER',
  'V8.GC_MARK_COMPACTOR',
  'V8.GC_MC_INCREMENTAL',
  'V8.GC_MC_INCREMENTAL_FINALIZE',
]);

interface RawEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string; txn_id?: number };
}

/** Starts tracing; the returned function stops it and reduces what was recorded. */
export async function startChromiumTrace(page: Page): Promise<() => Promise<ChromiumTrace>> {
  const cdp = await page.context().newCDPSession(page);
  const complete = new Promise<string>((resolve) =>
    cdp.on('Tracing.tracingComplete', (event: { stream?: string }) => resolve(event.stream ?? '')),
  );
  await cdp.send('Tracing.start', {
    traceConfig: { includedCategories: CATEGORIES, recordMode: 'recordAsMuchAsPossible' },
    transferMode: 'ReturnAsStream',
  });
  return async () => {
    await cdp.send('Tracing.end');
    const handle = await complete;
    const chunks: string[] = [];
    for (;;) {
      const read = await cdp.send('IO.read', { handle, size: 1 << 20 });
      chunks.push(read.base64Encoded ? Buffer.from(read.data, 'base64').toString() : read.data);
      if (read.eof) break;
    }
    await cdp.send('IO.close', { handle });
    await cdp.detach();
    const parsed = JSON.parse(chunks.join('')) as { traceEvents: RawEvent[] } | RawEvent[];
    return reduce(Array.isArray(parsed) ? parsed : parsed.traceEvents);
  };
}

function reduce(events: RawEvent[]): ChromiumTrace {
  const threads = new Map<string, string>();
  let offset: number | undefined;
  for (const event of events) {
    if (event.ph === 'M' && event.name === 'thread_name' && event.args?.name)
      threads.set(`${event.pid}:${event.tid}`, event.args.name);
    if (offset === undefined && event.name.startsWith('bench-clock '))
      offset = Number(event.name.slice('bench-clock '.length)) - event.ts / 1000;
  }
  if (offset === undefined) throw new Error('the trace has no bench-clock mark');
  const at = (ts: number) => ts / 1000 + offset!;
  const byId = new Map<number, BackendTx>();
  const tx = (id: number) => {
    let found = byId.get(id);
    if (found === undefined) {
      found = { txnId: id, registered: Number.NaN };
      byId.set(id, found);
    }
    return found;
  };
  const gc: GcPause[] = [];
  for (const event of events) {
    if (event.ph !== 'X') continue;
    const id = event.args?.txn_id;
    if (id !== undefined) {
      const t = tx(id);
      if (event.name === 'Database::RegisterAndScheduleTransaction') t.registered = at(event.ts);
      else if (/^Database::\w+Operation$/.test(event.name))
        t.firstOperation = Math.min(t.firstOperation ?? Number.POSITIVE_INFINITY, at(event.ts));
      else if (event.name === 'Transaction::DoPendingCommit') {
        t.commitStart = at(event.ts);
        t.commitMs = (event.dur ?? 0) / 1000;
        t.commitCpuMs = (event.tdur ?? 0) / 1000;
      } else if (event.name === 'IDBTransaction::onComplete') {
        t.completeStart = at(event.ts);
        t.completeEnd = at(event.ts + (event.dur ?? 0));
      }
      continue;
    }
    if (!GC_PAUSES.has(event.name)) continue;
    const thread = threads.get(`${event.pid}:${event.tid}`);
    const kind =
      thread === 'ServiceWorker thread'
        ? 'worker'
        : thread === 'CrRendererMain'
          ? 'page'
          : undefined;
    if (kind === undefined) continue;
    gc.push({ thread: kind, kind: event.name, at: at(event.ts), ms: (event.dur ?? 0) / 1000 });
  }
  return {
    transactions: [...byId.values()].filter((t) => !Number.isNaN(t.registered)),
    gc,
  };
}
