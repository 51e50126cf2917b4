import type { BrowserResults } from '../run.ts';

/**
 * The batch targets (SPEC §15.1's benchmarks), each checked against one run's results: what
 * `npm run bench` prints last and `bench/README.md` reports. A line is `met`, `missed`, or
 * `not measured` when the run left its part out (`--quick`, `--only`). Nothing here fails a run.
 */

interface Target {
  target: string;
  measured: string;
  met: boolean | undefined;
}

const rate = (n: number) => `${n.toLocaleString('en')} rows/s`;

export function batchTargets(browser: BrowserResults): Target[] {
  const drain = (rows: number, latencyMs: number) =>
    browser.drains?.find((d) => d.options.rows === rows && d.options.latencyMs === latencyMs);
  const throughput = (rows: number, latencyMs: number, perSecond: number, ratio: number) => {
    const d = drain(rows, latencyMs);
    return {
      target: `+${latencyMs} ms, ${rows.toLocaleString('en')} rows: ≥ ${rate(perSecond)}, ≥ ${ratio}× Workbox`,
      measured: d
        ? `${rate(d.batches.rowsPerSecond)}, ${d.ratios.batches}× (Workbox ${d.workbox.rowsPerSecond}, single ${d.single.rowsPerSecond})`
        : 'not measured',
      met: d ? d.batches.rowsPerSecond >= perSecond && d.ratios.batches >= ratio : undefined,
    };
  };
  const cpu = (browser.drains ?? []).flatMap((d) =>
    d.batches.cpuMsPerRow ? [d.batches.cpuMsPerRow.browser] : [],
  );
  const loss = browser.loss;
  const lossOf = (r: NonNullable<typeof loss>['batches']) =>
    `${r.duplicateEffects} dup / ${r.missing} missing of ${r.rows.toLocaleString('en')}`;
  const online = browser.enqueue?.find((e) => e.network === 'online' && e.variant === 'batches');
  return [
    throughput(1_000, 50, 1_000, 50),
    throughput(1_000, 0, 2_000, 10),
    throughput(10_000, 0, 2_000, 10),
    {
      target: 'browser CPU per drained row ≤ 0.5 ms (batches)',
      measured: cpu.length === 0 ? 'not measured' : `${Math.min(...cpu)}–${Math.max(...cpu)} ms`,
      met: cpu.length === 0 ? undefined : Math.max(...cpu) <= 0.5,
    },
    {
      target: '10 % response loss: 0 duplicate effects, 0 missing',
      measured: loss
        ? `batches ${lossOf(loss.batches)} (${loss.batches.replays} replays), single ${lossOf(loss.single)}, Workbox ${lossOf(loss.workbox)}`
        : 'not measured',
      met: loss
        ? [loss.batches, loss.single].every((r) => r.duplicateEffects === 0 && r.missing === 0)
        : undefined,
    },
    {
      target: 'online enqueue with a drain running: p99 ≤ 8 ms, max ≤ 20 ms',
      measured: online
        ? `p50 ${online.p50Ms} / p99 ${online.p99Ms} / max ${online.maxMs} ms`
        : 'not measured',
      met: online ? online.p99Ms <= 8 && online.maxMs <= 20 : undefined,
    },
  ];
}

/** The targets as lines of the printed table. */
export function targetLines(browser: BrowserResults): string[] {
  const targets = batchTargets(browser);
  if (targets.every((t) => t.met === undefined)) return [];
  const width = Math.max(...targets.map((t) => t.target.length)) + 3;
  return [
    '',
    'batches against the targets',
    ...targets.map(
      (t) =>
        `  ${t.target.padEnd(width)}${(t.met === undefined ? '—' : t.met ? 'met' : 'missed').padEnd(8)}${t.measured}`,
    ),
  ];
}
