import { describe, expect, it } from 'vitest';
import type { DrainResult } from '../../bench/browser/drain.ts';
import { drainChartPanels, drainChartSvg } from '../../bench/browser/drain-chart.ts';
import type { PhoneResult } from '../../bench/browser/phone.ts';
import { specTargets } from '../../bench/browser/targets.ts';
import type { BrowserResults } from '../../bench/run.ts';

function result(
  system: 'outbox' | 'workbox',
  mode: 'batches' | 'single' | undefined,
  rows: number,
  seconds: number,
  drained = rows,
): DrainResult {
  return {
    system,
    ...(mode === undefined ? {} : { mode }),
    rows,
    latencyMs: 0,
    fillPerSecond: 1,
    drained,
    seconds,
    rowsPerSecond: drained / seconds,
    complete: drained >= rows,
    transactionsPerRow: { readonly: 0, readwrite: 0 },
    requestsPerRow: 0,
    batches: 0,
    progress: [
      [0, 0],
      [seconds / 2, drained / 2],
      [seconds, drained],
    ],
  };
}

function drain(rows: number, latencyMs: number, seconds: [number, number, number]) {
  const [batches, single, workbox] = seconds;
  return {
    options: { rows, latencyMs, capSeconds: 60 },
    batches: result('outbox', 'batches', rows, batches),
    single: result('outbox', 'single', rows, single),
    workbox: result('workbox', undefined, rows, workbox, Math.min(rows, 100)),
    ratios: { batches: 1, single: 1 },
  };
}

const phone: PhoneResult = { ...drain(500, 200, [1.5, 26, 110]), targetSeconds: 3 };

describe('drainChartPanels: one panel per latency, three queues each', () => {
  it('takes +0 and +50 ms from the drains and +200 ms from the phone part', () => {
    const panels = drainChartPanels({
      drains: [
        drain(1000, 0, [2, 6, 15]),
        drain(1000, 50, [1.4, 15, 65]),
        drain(10_000, 0, [14, 58, 60]),
      ],
      phone,
    });
    expect(panels.map((p) => p.title)).toEqual([
      '+0 ms per request, 1,000 rows',
      '+50 ms per request, 1,000 rows',
      '+200 ms per request, 500 rows',
    ]);
    expect(panels.map((p) => p.yMax)).toEqual([1000, 1000, 500]);
    const [, , slow] = panels;
    expect(slow?.series.map((s) => s.label)).toEqual([
      'outbox, batches',
      'outbox, one request per row',
      'Workbox Queue',
    ]);
    expect(slow?.series[0]?.points).toEqual(phone.batches.progress);
  });

  it("marks SPEC §19's 3 s on the phone part's panel only", () => {
    const panels = drainChartPanels({ drains: [drain(1000, 0, [2, 6, 15])], phone });
    expect(panels.map((p) => p.marker)).toEqual([
      undefined,
      undefined,
      { x: 3, label: 'target: 3 s' },
    ]);
  });

  it('says how far each queue got: all rows and when, or how many by the end of its window', () => {
    const [panel] = drainChartPanels({ drains: [drain(1000, 0, [2, 6, 15])] });
    expect(panel?.series.map((s) => s.note)).toEqual([
      'all 1,000 in 2 s',
      'all 1,000 in 6 s',
      '100 of 1,000 by 15 s',
    ]);
  });

  it('leaves a latency the run did not drain at as an empty panel', () => {
    const panels = drainChartPanels({ phone });
    expect(panels.map((p) => p.series.length)).toEqual([0, 0, 3]);
  });

  it('has no chart for a run without drains', () => {
    expect(drainChartPanels({})).toEqual([]);
    expect(drainChartSvg({ date: '2026-12-02T10:00:00Z' })).toBeUndefined();
  });

  it('draws the run as one SVG with nine series', () => {
    const svg = drainChartSvg({
      date: '2026-12-02T10:00:00Z',
      drains: [drain(1000, 0, [2, 6, 15]), drain(1000, 50, [1.4, 15, 65])],
      phone,
    });
    expect(svg?.match(/<polyline/g)).toHaveLength(9);
    expect(svg).toContain('2026-12-02');
  });
});

describe('specTargets: 500 rows at +200 ms within 3 s', () => {
  const line = (browser: Partial<BrowserResults>) =>
    specTargets(browser as BrowserResults).find((t) => t.target.includes('+200 ms'));

  it('is met when the batched drain applied every row within the target', () => {
    expect(line({ phone })).toMatchObject({
      met: true,
      measured: 'batches all 500 in 1.5 s (single all 500 in 26 s, Workbox 100 of 500 by 110 s)',
    });
  });

  it('is missed when the batches took longer', () => {
    expect(line({ phone: { ...phone, batches: result('outbox', 'batches', 500, 3.2) } })?.met).toBe(
      false,
    );
  });

  it('is missed when the window closed before every row was applied', () => {
    const partial = result('outbox', 'batches', 500, 2, 499);
    expect(line({ phone: { ...phone, batches: partial } })?.met).toBe(false);
  });

  it('is not measured without the phone part', () => {
    expect(line({})).toMatchObject({ met: undefined, measured: 'not measured' });
  });
});
