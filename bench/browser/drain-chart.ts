import type { BrowserResults } from '../run.ts';
import type { DrainComparison, DrainOptions, DrainResult } from './drain.ts';
import { appliedIn, PHONE_TARGET } from './phone.ts';
import { type ChartPanel, type ChartSeries, lineChartSvg } from './svg-chart.ts';

/**
 * The drains of one run as a chart (`bench/results/drain-progress.svg`): rows applied over time
 * for ours in batches, ours one request per row and Workbox, one panel per added latency — the
 * `drain` part's +0 and +50 ms, the `phone` part's +200 ms.
 */

/** The latencies the chart has a panel for, in order. */
export const CHART_LATENCIES = [0, 50, 200] as const;

const SYSTEMS = [
  { key: 'batches', label: 'outbox, batches', color: '#1b7837' },
  { key: 'single', label: 'outbox, one request per row', color: '#2166ac', dash: '7 4' },
  { key: 'workbox', label: 'Workbox Queue', color: '#b2182b', dash: '2 3' },
] as const;

type Drain = { options: DrainOptions } & DrainComparison;

/**
 * One panel per latency in {@link CHART_LATENCIES}: the first drain of the run at that latency
 * (the `drain` part's, then the `phone` part's), its three queues as series of
 * `[seconds, rows applied]`; the phone part's panel marks SPEC §19's 3 s. A latency the run did not drain at has an empty panel; a run that
 * drained at none has no panels.
 */
export function drainChartPanels(browser: Pick<BrowserResults, 'drains' | 'phone'>): ChartPanel[] {
  const drains: Drain[] = [...(browser.drains ?? []), ...(browser.phone ? [browser.phone] : [])];
  if (drains.length === 0) return [];
  return CHART_LATENCIES.map((latencyMs) => {
    const drain = drains.find((d) => d.options.latencyMs === latencyMs);
    if (drain === undefined) return { title: `+${latencyMs} ms: not run`, series: [] };
    const phoneTarget =
      drain === browser.phone &&
      drain.options.rows === PHONE_TARGET.rows &&
      latencyMs === PHONE_TARGET.latencyMs;
    return {
      title: `+${latencyMs} ms per request, ${drain.options.rows.toLocaleString('en')} rows`,
      yMax: drain.options.rows,
      ...(phoneTarget
        ? { marker: { x: PHONE_TARGET.seconds, label: `target: ${PHONE_TARGET.seconds} s` } }
        : {}),
      series: SYSTEMS.map(({ key, label, color, ...style }) =>
        seriesOf(drain[key], label, color, 'dash' in style ? style.dash : undefined),
      ),
    };
  });
}

function seriesOf(
  result: DrainResult,
  label: string,
  color: string,
  dash: string | undefined,
): ChartSeries {
  return {
    label,
    points: result.progress,
    color,
    ...(dash === undefined ? {} : { dash }),
    note: appliedIn(result),
  };
}

/** The chart of one run's drains, or undefined when it drained nothing. */
export function drainChartSvg(browser: Pick<BrowserResults, 'drains' | 'phone' | 'date'>) {
  const panels = drainChartPanels(browser);
  if (panels.length === 0) return undefined;
  return lineChartSvg(panels, {
    title: `Rows applied at the server over time (npm run bench, ${browser.date.slice(0, 10)})`,
    xLabel: 'seconds since the flush',
    yLabel: 'rows applied',
  });
}
