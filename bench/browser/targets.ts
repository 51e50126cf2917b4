import type { BrowserResults } from '../run.ts';
import { cpuOverFloor } from './floor.ts';
import { appliedIn } from './phone.ts';

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

/**
 * SPEC §19's targets, restated after the floor was measured: the drain judged against what its
 * own contract costs and against the peers, all in the same run. The server kit's target is
 * measured by `bench/server.ts` and printed there.
 */
export function specTargets(browser: BrowserResults): Target[] {
  const drains = browser.drains ?? [];
  const at = (rows: number, latencyMs: number) =>
    drains.find((d) => d.options.rows === rows && d.options.latencyMs === latencyMs);
  const overFloor = (rows: number): Target => {
    const multiples = drains
      .filter((d) => d.options.rows === rows)
      .map((d) => ({
        latencyMs: d.options.latencyMs,
        multiple: cpuOverFloor(browser.floor, rows, d.batches.cpuMsPerRow?.browser),
      }))
      .filter((m): m is { latencyMs: number; multiple: number } => m.multiple !== undefined);
    return {
      target: `drain CPU per row ≤ 1.2× the floor's, ${rows.toLocaleString('en')} rows`,
      measured:
        multiples.length === 0
          ? 'not measured'
          : multiples.map((m) => `${m.multiple}× at +${m.latencyMs} ms`).join(', '),
      met: multiples.length === 0 ? undefined : multiples.every((m) => m.multiple <= 1.2),
    };
  };
  const overWorkbox = (latencyMs: number, ratio: number): Target => {
    const runs = drains.filter((d) => d.options.latencyMs === latencyMs);
    return {
      target: `+${latencyMs} ms: ≥ ${ratio}× Workbox's rows/s`,
      measured:
        runs.length === 0
          ? 'not measured'
          : runs
              .map((d) => `${d.ratios.batches}× at ${d.options.rows.toLocaleString('en')} rows`)
              .join(', '),
      met: runs.length === 0 ? undefined : runs.every((d) => d.ratios.batches >= ratio),
    };
  };
  const sizes = [...new Set(drains.map((d) => d.options.rows))];
  const pairs = sizes.flatMap((rows) => {
    const slow = at(rows, 50);
    const fast = at(rows, 0);
    return slow && fast ? [{ rows, slow: slow.batches, fast: fast.batches }] : [];
  });
  const phone = browser.phone;
  const online = browser.enqueue?.find((e) => e.network === 'online' && e.variant === 'batches');
  const workboxAdd = browser.enqueue?.find((e) => e.system === 'workbox');
  return [
    overFloor(1_000),
    overFloor(10_000),
    overWorkbox(0, 10),
    overWorkbox(50, 50),
    {
      target: 'at +50 ms no slower than at +0 ms',
      measured:
        pairs.length === 0
          ? 'not measured'
          : pairs
              .map(
                (p) =>
                  `${p.rows.toLocaleString('en')} rows: ${rate(p.slow.rowsPerSecond)} vs ${rate(p.fast.rowsPerSecond)}`,
              )
              .join(', '),
      met:
        pairs.length === 0
          ? undefined
          : pairs.every((p) => p.slow.rowsPerSecond >= p.fast.rowsPerSecond),
    },
    {
      target: `${phone?.options.rows ?? 500} rows at +200 ms all applied within ${phone?.targetSeconds ?? 3} s`,
      measured: phone
        ? `batches ${appliedIn(phone.batches)} (single ${appliedIn(phone.single)}, Workbox ${appliedIn(phone.workbox)})`
        : 'not measured',
      met: phone
        ? phone.batches.complete && phone.batches.seconds <= phone.targetSeconds
        : undefined,
    },
    {
      target: "online enqueue, drain running: p99 ≤ 1.5×, max ≤ 2× Workbox's add",
      measured:
        online && workboxAdd
          ? `p99 ${online.p99Ms} vs ${workboxAdd.p99Ms} ms, max ${online.maxMs} vs ${workboxAdd.maxMs} ms`
          : 'not measured',
      met:
        online && workboxAdd
          ? online.p99Ms <= 1.5 * workboxAdd.p99Ms && online.maxMs <= 2 * workboxAdd.maxMs
          : undefined,
    },
  ];
}

/** SPEC §19's targets as lines of the printed table. */
export function specTargetLines(browser: BrowserResults): string[] {
  return linesOf('SPEC §19 targets', specTargets(browser));
}

/** The targets as lines of the printed table. */
export function targetLines(browser: BrowserResults): string[] {
  return linesOf('batches against the targets', batchTargets(browser));
}

function linesOf(title: string, targets: Target[]): string[] {
  if (targets.every((t) => t.met === undefined)) return [];
  const width = Math.max(...targets.map((t) => t.target.length)) + 3;
  return [
    '',
    title,
    ...targets.map(
      (t) =>
        `  ${t.target.padEnd(width)}${(t.met === undefined ? '—' : t.met ? 'met' : 'missed').padEnd(8)}${t.measured}`,
    ),
  ];
}
