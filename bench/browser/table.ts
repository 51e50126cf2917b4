import type { BrowserResults } from '../run.ts';
import { CPU_SPLIT_KEYS, type CpuSplit } from './cpu.ts';
import { cpuOverFloor } from './floor.ts';
import { appliedIn } from './phone.ts';
import type { Spread } from './stats.ts';
import { specTargetLines, targetLines } from './targets.ts';
import { PART_LABELS, PARTS } from './trace-analysis.ts';

/** The small table `npm run bench` prints at the end. */

const pad = (value: unknown, width: number) => String(value).padStart(width);
const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : '—');
/** `batches`, `single` (ours) or `workbox`. */
const systemLabel = (r: { system: string; mode?: string }) => r.mode ?? r.system;
const drainLabel = (o: { rows: number; latencyMs: number }) =>
  `${o.rows.toLocaleString('en')} rows, +${o.latencyMs} ms`;

/** What is read from bench/results/server.json (its owner may add fields; all optional). */
interface ServerRow {
  adapter?: string;
  writesPerSecond?: number;
  medianWritesPerSecond?: number;
  bestWritesPerSecond?: number;
  p99Ms?: number;
  storm?: { copies?: number; effects?: number };
  /** The same creates in batches (SPEC §15.1), per batch size. */
  batched?: Array<{ batchSize?: number; medianItemsPerSecond?: number; p99Ms?: number }>;
}

export function printTable(browser: BrowserResults, server: unknown): void {
  const out: string[] = [''];
  const { machine } = browser;
  out.push(
    `${machine.chromium} · node ${machine.node} · ${machine.cpus} cpus · load ${machine.loadavgBefore
      .map((l) => l.toFixed(2))
      .join(' ')} → ${(browser.loadavgAfter ?? []).map((l) => l.toFixed(2)).join(' ')}`,
  );

  if (browser.enqueue) {
    out.push(
      '',
      'enqueue, page → worker → committed   p50 ms   p99 ms   max ms   seq/s   16 in flight/s',
    );
    for (const r of browser.enqueue) {
      out.push(
        `  ${`${r.system} (${[r.network, r.variant].filter(Boolean).join(', ')})`.padEnd(36)}${pad(ms(r.p50Ms), 7)}${pad(ms(r.p99Ms), 9)}${pad(ms(r.maxMs), 9)}${pad(r.sequentialPerSecond, 8)}${pad(r.concurrent.perSecond, 17)}`,
      );
    }
  }

  if (browser.enqueueTrace) {
    const { variants, traced } = browser.enqueueTrace;
    const { slow } = traced;
    const row = (label: string, r: { p50Ms: number; p99Ms: number; maxMs: number }) =>
      `  ${label.padEnd(42)}${pad(ms(r.p50Ms), 7)}${pad(ms(r.p99Ms), 9)}${pad(ms(r.maxMs), 9)}${pad('', 4)}`;
    out.push(
      '',
      `online enqueue, traced (${traced.calls} calls)         p50 ms   p99 ms   max ms   mean of the ${slow.calls} over ${slow.thresholdMs} ms`,
      ...variants.map(
        (v) =>
          `${row(`${v.label}`, v)}   p99 per 100: ${v.p99ByHundred.map(ms).join(' ')}; disk sync p50/p99/max ${ms(v.fsync.p50Ms)}/${ms(v.fsync.p99Ms)}/${ms(v.fsync.maxMs)}`,
      ),
      `${row('traced worker, whole call', traced.totals)}`,
    );
    out.push('  threads per call (run + waiting for a CPU, ms; /proc schedstat):');
    for (const v of variants) {
      const top = v.threads
        .slice(0, 6)
        .map((t) => `${t.group} ${t.runMs.toFixed(2)}+${t.waitMs.toFixed(2)}`)
        .join(', ');
      out.push(
        `    ${v.label}: all ${v.threadTotal.runMs.toFixed(2)}+${v.threadTotal.waitMs.toFixed(2)}; ${top}`,
      );
    }
    for (const part of PARTS) {
      out.push(
        `${row(`  ${PART_LABELS[part]}`, traced.parts[part])}${pad(ms(slow.meanParts[part]), 8)}`,
      );
    }
    if (traced.backend) {
      const { all, slow: slowBackend, gc, slowWithGc, matched } = traced.backend;
      const labels = {
        toBackendMs: 'transaction() → registered in the backend',
        queuedMs: 'registered → first operation (queued)',
        blockedMs: '  of it, another transaction running',
        commitMs: 'backend commit (write + sync), wall',
        commitCpuMs: 'backend commit, CPU',
      } as const;
      out.push(
        `  the enqueue transaction in the IndexedDB backend (Chromium trace, ${matched} matched):`,
      );
      for (const [key, label] of Object.entries(labels) as [keyof typeof labels, string][]) {
        out.push(`${row(`  ${label}`, all[key])}${pad(ms(slowBackend[key].meanMs), 8)}`);
      }
      out.push(
        `  GC pauses on the worker's and the page's threads: ${gc.count}, longest ${ms(gc.maxMs)} ms, ${ms(gc.totalMs)} ms in all; slow calls with one: ${slowWithGc} of ${slow.calls}`,
      );
    }
    const counts = (record: Record<string, number>) =>
      Object.entries(record)
        .map(([key, n]) => `${key} ${n}`)
        .join(', ') || 'none';
    for (const call of traced.slowest.slice(0, 3)) {
      const parts = PARTS.map((part) => `${part} ${call.parts[part].toFixed(1)}`).join(' + ');
      const backend = call.backend
        ? `; backend queued ${call.backend.queuedMs.toFixed(1)} (behind another ${call.backend.blockedMs.toFixed(1)}), commit ${call.backend.commitMs.toFixed(1)}`
        : '';
      out.push(
        `  slowest: ${call.total.toFixed(1)} ms = ${parts}${backend}; gc ${(call.gcMs ?? 0).toFixed(1)}`,
      );
    }
    out.push(
      `  slow calls: largest part ${counts(slow.largestPart)}`,
      `  transactions that ran first while a slow call's waited, per call: ${counts(slow.ranAheadPerCall)}`,
      `  per slow call: ${slow.stallsPerCall} worker stalls > 10 ms, ${slow.noticesPerCall} change notices`,
      `  worker stalls > 10 ms in the window: ${traced.stalls.count}, longest ${ms(traced.stalls.maxMs)} ms, ${ms(traced.stalls.totalMs)} ms in all`,
      '  transactions in the window        count   p50 ms   p99 ms   max ms (opened → completed)   backend commit p50 / p99 / max ms',
    );
    for (const [kind, t] of Object.entries(traced.transactions)) {
      out.push(
        `    ${kind.padEnd(30)}${pad(t.count, 7)}${pad(ms(t.p50Ms), 9)}${pad(ms(t.p99Ms), 9)}${pad(ms(t.maxMs), 9)}${t.commit ? `${''.padEnd(27)}${ms(t.commit.p50Ms)} / ${ms(t.commit.p99Ms)} / ${ms(t.commit.maxMs)}` : ''}`,
      );
    }
  }

  if (browser.drains) {
    out.push(
      '',
      'flush throughput, rows/s      batches   single   workbox   batches/workbox   single/workbox',
    );
    for (const { options, batches, single, workbox, ratios } of browser.drains) {
      out.push(
        `  ${drainLabel(options).padEnd(26)}${pad(batches.rowsPerSecond, 10)}${pad(single.rowsPerSecond, 9)}${pad(workbox.rowsPerSecond, 10)}${pad(`${ratios.batches}×`, 18)}${pad(`${ratios.single}×`, 17)}`,
      );
    }
    out.push(...drainCostLines(browser));
  }

  if (browser.phone) {
    const { options, batches, single, workbox, targetSeconds } = browser.phone;
    out.push(
      '',
      `phone-like latency, ${drainLabel(options)}   all applied   rows/s   CPU ms browser / row`,
    );
    for (const r of [batches, single, workbox]) {
      const cpu = r.cpuMsPerRow;
      out.push(
        `  ${systemLabel(r).padEnd(34)}${pad(appliedIn(r), 22)}${pad(r.rowsPerSecond, 9)}${pad(cpu ? ms(cpu.browser) : '—', 23)}`,
      );
    }
    out.push(
      `  target (SPEC §19): all ${options.rows} applied within ${targetSeconds} s — batches ${appliedIn(batches)}, Workbox ${appliedIn(workbox)}`,
    );
  }

  if (browser.floor) out.push(...floorLines(browser.floor));
  out.push(...cpuSplitLines(browser));

  if (browser.liveView) {
    const { options, without, watched, ratio } = browser.liveView;
    out.push(
      '',
      `our flush, ${drainLabel(options)}      rows/s   ratio   CPU ms browser / row   IDB (read+write) / row`,
    );
    for (const [label, r] of [
      ['no live view', without],
      ['live view open', watched],
    ] as const) {
      const cpu = r.cpuMsPerRow;
      const tx = r.transactionsPerRow;
      out.push(
        `  ${label.padEnd(32)}${pad(r.rowsPerSecond, 8)}${pad(r === watched ? `${ratio}×` : '', 8)}${pad(cpu ? ms(cpu.browser) : '—', 23)}${pad(`${tx.readonly.toFixed(2)}+${tx.readwrite.toFixed(2)}`, 25)}`,
      );
    }
  }

  if (browser.loss) {
    out.push(
      '',
      'response loss           rows   drop   effects   duplicate   missing   replays   queue retries   batch requests   seconds',
    );
    const { batches, single, workbox } = browser.loss;
    for (const r of [batches, single, workbox]) {
      out.push(
        `  ${systemLabel(r).padEnd(20)}${pad(r.rows, 7)}${pad(`${r.dropRate * 100}%`, 7)}${pad(r.effects, 10)}${pad(r.duplicateEffects, 12)}${pad(r.missing, 10)}${pad(r.replays, 10)}${pad(r.queueRetries, 16)}${pad(r.batches, 17)}${pad(r.seconds, 10)}`,
      );
    }
  }

  if (browser.firstBatch) {
    out.push(
      '',
      'first batch (ours)      queued   first claim ms   batch of 4 ms   whole flush ms',
    );
    for (const r of browser.firstBatch) {
      out.push(
        `  ${''.padEnd(20)}${pad(r.queued.toLocaleString('en'), 8)}${pad(ms(r.firstClaimMs), 17)}${pad(ms(r.batchClaimMs), 16)}${pad(ms(r.flushMs), 17)}`,
      );
    }
  }

  if (browser.firstCall) {
    const { samples, live, afterStop, timedOut } = browser.firstCall;
    out.push('', `page call (stats), ${samples} worker stops     p50 ms   p99 ms   max ms`);
    for (const [label, r] of [
      ['to a live worker', live],
      ['first after the worker stopped', afterStop],
    ] as const) {
      out.push(
        `  ${label.padEnd(38)}${pad(ms(r.p50Ms), 7)}${pad(ms(r.p99Ms), 9)}${pad(ms(r.maxMs), 9)}`,
      );
    }
    if (timedOut > 0) out.push(`  ${timedOut} of ${samples} waited for the call timeout`);
  }

  if (browser.outage) {
    const r = browser.outage;
    out.push(
      '',
      'after an outage (ours)  rows   outage s   refused   first effect s   all applied s',
      `  ${''.padEnd(20)}${pad(r.rows, 6)}${pad(r.outageSeconds, 11)}${pad(r.refused, 10)}${pad(r.firstEffectSeconds, 17)}${pad(r.complete ? r.drainSeconds : `${r.drained} by ${r.drainSeconds}`, 16)}`,
    );
  }

  const report = server as { rows?: ServerRow[]; results?: ServerRow[] } | undefined;
  const rows = report?.results ?? report?.rows;
  if (Array.isArray(rows)) {
    out.push('', 'reference server        writes/s   p99 ms   duplicate storm (copies → effects)');
    for (const r of rows) {
      const writes = r.medianWritesPerSecond ?? r.writesPerSecond ?? r.bestWritesPerSecond;
      out.push(
        `  ${String(r.adapter ?? '?').padEnd(20)}${pad(writes ?? '—', 10)}${pad(r.p99Ms === undefined ? '—' : ms(r.p99Ms), 9)}   ${r.storm ? `${r.storm.copies} → ${r.storm.effects}` : '—'}`,
      );
    }
    const batched = rows.flatMap((r) =>
      (r.batched ?? []).map((b) => ({ adapter: r.adapter, ...b })),
    );
    if (batched.length > 0) {
      out.push('', 'reference server, batches   items/s   p99 ms per batch');
      for (const b of batched) {
        out.push(
          `  ${`${b.adapter ?? '?'}, ${b.batchSize ?? '?'} per batch`.padEnd(26)}${pad(b.medianItemsPerSecond ?? '—', 8)}${pad(b.p99Ms === undefined ? '—' : ms(b.p99Ms), 19)}`,
        );
      }
    }
  }
  out.push(...targetLines(browser));
  out.push(...specTargetLines(browser));
  for (const { part, error } of browser.failed ?? [])
    out.push('', `part ${part} failed, its numbers are missing: ${error}`);
  console.log(out.join('\n'));
}

/**
 * The drains' cost per row; with the floor in the same run, each drain's browser CPU per row
 * as a multiple of the per-row contract's at the same row count (`× floor`, SPEC §19).
 */
export function drainCostLines(browser: Pick<BrowserResults, 'drains' | 'floor'>): string[] {
  const withFloor = browser.floor !== undefined;
  const out = [
    '',
    `cost per drained row                     CPU ms browser${withFloor ? '   × floor' : ''}   CPU ms server   IDB transactions (read+write)   IDB requests   rows per batch   drained in`,
  ];
  for (const { options, batches, single, workbox } of browser.drains ?? []) {
    for (const r of [batches, single, workbox]) {
      const cpu = r.cpuMsPerRow;
      const tx = r.transactionsPerRow;
      const perBatch = r.batches > 0 ? (r.drained / r.batches).toFixed(1) : '—';
      const overFloor = cpuOverFloor(browser.floor, options.rows, cpu?.browser);
      const floorColumn = withFloor
        ? pad(overFloor === undefined ? '—' : `${overFloor.toFixed(2)}×`, 10)
        : '';
      out.push(
        `  ${`${drainLabel(options)}, ${systemLabel(r)}`.padEnd(40)}${pad(cpu ? ms(cpu.browser) : '—', 14)}${floorColumn}${pad(cpu ? ms(cpu.server) : '—', 16)}${pad(`${tx.readonly.toFixed(2)}+${tx.readwrite.toFixed(2)}`, 16)}${pad(r.requestsPerRow.toFixed(2), 29)}${pad(perBatch, 17)}   ${r.drained}${r.complete ? '' : ` of ${r.rows}`} in ${r.seconds} s`,
      );
    }
  }
  return out;
}

/**
 * Where a row's browser CPU goes, by thread (`cpuSplit`): each batched drain of the run, then
 * the floor's per-row contract with and without §6.1 at the same row counts — what the drain
 * spends beyond its floor, and on which side of the IPC.
 */
export function cpuSplitLines(browser: Pick<BrowserResults, 'drains' | 'floor'>): string[] {
  const rows: Array<[string, CpuSplit]> = [];
  for (const { options, batches } of browser.drains ?? [])
    if (batches.cpuByThread)
      rows.push([`drain, ${drainLabel(options)}, batches`, batches.cpuByThread]);
  for (const size of browser.floor?.sizes ?? []) {
    for (const variant of ['contract-with-names', 'contract'] as const) {
      const v = size.variants.find((x) => x.variant === variant);
      if (v?.cpuByThread)
        rows.push([
          `floor, ${size.rows.toLocaleString('en')} rows: ${variant === 'contract' ? 'contract (§4/§5)' : 'contract + §6.1'}`,
          v.cpuByThread,
        ]);
    }
  }
  if (rows.length === 0) return [];
  const widths = [26, 16, 22, 17, 8];
  return [
    '',
    `where a row's browser CPU goes, ms per row      all   browser pool (IndexedDB)   worker thread   worker's renderer, rest   browser, rest   other`,
    ...rows.map(([label, split]) => {
      const all = CPU_SPLIT_KEYS.reduce((sum, key) => sum + split[key], 0);
      return `  ${label.padEnd(42)}${pad(ms(all), 7)}${CPU_SPLIT_KEYS.map((key, i) => pad(ms(split[key]), widths[i]!)).join('')}`;
    }),
  ];
}

/** `median (min–max)` of a spread. */
const ranged = (s: Spread | undefined, digits: number) =>
  s === undefined
    ? '—'
    : `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;

/** The floor's table: each variant per size, and the batched drain of the run beside it. */
export function floorLines(floor: NonNullable<BrowserResults['floor']>): string[] {
  const out: string[] = [
    '',
    `IndexedDB floor of the per-row contract, ${floor.rowsPerTransaction} rows per transaction (median (range) of the rounds)`,
  ];
  for (const size of floor.sizes) {
    const beside = floor.besideDrain.find((b) => b.rows === size.rows);
    out.push(
      `  ${size.rows.toLocaleString('en')} rows, ${size.rounds} rounds (JSON bytes: row ${size.bytes.row}, claimed ${size.bytes.claimed}, receipt ${size.bytes.receipt})`.padEnd(
        66,
      ) +
        `${'rows/s'.padStart(22)}${'CPU ms browser / row'.padStart(24)}${'IDB req / row'.padStart(15)}${beside ? '   engine / floor: rows/s   CPU' : ''}`,
    );
    for (const v of size.variants) {
      const ratio = beside?.ratios.find((r) => r.variant === v.variant);
      out.push(
        `    ${v.label.padEnd(62)}${pad(ranged(v.rowsPerSecond, 0), 22)}${pad(ranged(v.cpuMsPerRow, 2), 24)}${pad(v.requestsPerRow.toFixed(2), 15)}${
          ratio
            ? `${pad(`${ratio.rowsPerSecond.toFixed(2)}×`, 25)}${pad(ratio.cpuMsPerRow === undefined ? '—' : `${ratio.cpuMsPerRow.toFixed(2)}×`, 7)}`
            : ''
        }`,
      );
    }
    if (beside) {
      const { drain } = beside;
      out.push(
        `    ${'the batched drain of this run (+0 ms), for the ratios'.padEnd(62)}${pad(drain.rowsPerSecond.toFixed(0), 22)}${pad(drain.cpuMsPerRow === undefined ? '—' : ms(drain.cpuMsPerRow), 24)}${pad(drain.requestsPerRow.toFixed(2), 15)}`,
      );
    }
  }
  return out;
}
