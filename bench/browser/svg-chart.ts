/**
 * Line charts as SVG text, small multiples side by side, with no dependency: what the bench
 * writes next to its JSON (`bench/results/*.svg`). Pure: panels in, one SVG document out.
 */

/** A point of a series: `[x, y]` in the panel's units. */
export type ChartPoint = readonly [x: number, y: number];

export interface ChartSeries {
  label: string;
  /** Drawn in this order, joined by straight lines. */
  points: readonly ChartPoint[];
  color: string;
  /** An SVG `stroke-dasharray`, so the series differ without colour too. */
  dash?: string;
  /** Said after the label in the legend (e.g. how far it got). */
  note?: string;
}

export interface ChartPanel {
  title: string;
  series: readonly ChartSeries[];
  /** The top of the y axis at least this (e.g. the rows queued); else the highest point. */
  yMax?: number;
  /** A vertical line at `x` with its label (e.g. a target time); the x axis reaches it. */
  marker?: { x: number; label: string };
}

export interface ChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Panels per row of the figure. */
  columns?: number;
}

const PLOT_WIDTH = 300;
const PLOT_HEIGHT = 180;
const MARGIN = { left: 56, right: 20, top: 34, bottom: 40 } as const;
const LEGEND_LINE = 16;
const FIGURE_TITLE = 30;
const FONT = 'font-family="system-ui, sans-serif"';

/**
 * Round tick values from 0 up to at least `max`, about `target` of them, spaced 1, 2 or 5 times
 * a power of ten; the last one is the axis's top. A `max` of 0 or less gives `[0, 1]`.
 */
export function niceTicks(max: number, target = 5): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0, 1];
  const rough = max / target;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 5, 10].find((m) => m * power >= rough) ?? 10) * power;
  const ticks: number[] = [];
  for (let i = 0; ; i++) {
    // Multiplying, not adding, keeps 0.1 + 0.2 style drift out of the labels.
    const value = Number((i * step).toPrecision(12));
    ticks.push(value);
    if (value >= max) return ticks;
  }
}

/** Text safe inside an SVG element or attribute. */
export function escapeXml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

const num = (value: number) => String(Math.round(value * 10) / 10);
const tickLabel = (value: number) => value.toLocaleString('en', { maximumFractionDigits: 3 });

/** The panels as one SVG document, each with its own axes, scaled to its own series. */
export function lineChartSvg(panels: readonly ChartPanel[], options: ChartOptions): string {
  const columns = Math.max(1, Math.min(options.columns ?? 3, panels.length || 1));
  const legendLines = Math.max(0, ...panels.map((p) => p.series.length));
  const cellWidth = MARGIN.left + PLOT_WIDTH + MARGIN.right;
  const cellHeight = MARGIN.top + PLOT_HEIGHT + MARGIN.bottom + legendLines * LEGEND_LINE + 8;
  const rows = Math.max(1, Math.ceil(panels.length / columns));
  const width = columns * cellWidth;
  const height = FIGURE_TITLE + rows * cellHeight;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT} font-size="12">`,
    `<title>${escapeXml(options.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">${escapeXml(options.title)}</text>`,
  ];
  panels.forEach((panel, index) => {
    const x = (index % columns) * cellWidth;
    const y = FIGURE_TITLE + Math.floor(index / columns) * cellHeight;
    parts.push(panelSvg(panel, options, x, y));
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function panelSvg(panel: ChartPanel, options: ChartOptions, left: number, top: number): string {
  const points = panel.series.flatMap((s) => s.points);
  const xTicks = niceTicks(Math.max(panel.marker?.x ?? 0, ...points.map(([x]) => x)));
  const yTicks = niceTicks(Math.max(panel.yMax ?? 0, ...points.map(([, y]) => y)));
  const xTop = xTicks.at(-1) ?? 1;
  const yTop = yTicks.at(-1) ?? 1;
  const originX = left + MARGIN.left;
  const originY = top + MARGIN.top + PLOT_HEIGHT;
  const px = (x: number) => originX + (x / xTop) * PLOT_WIDTH;
  const py = (y: number) => originY - (y / yTop) * PLOT_HEIGHT;
  const out = [
    `<g class="panel">`,
    `<text x="${num(originX + PLOT_WIDTH / 2)}" y="${num(top + 18)}" text-anchor="middle" font-weight="600">${escapeXml(panel.title)}</text>`,
  ];
  if (panel.series.length === 0) {
    out.push(
      `<text x="${num(originX + PLOT_WIDTH / 2)}" y="${num(originY - PLOT_HEIGHT / 2)}" text-anchor="middle" fill="#888">not measured in this run</text>`,
      '</g>',
    );
    return out.join('\n');
  }
  for (const tick of yTicks) {
    out.push(
      `<line x1="${num(originX)}" y1="${num(py(tick))}" x2="${num(originX + PLOT_WIDTH)}" y2="${num(py(tick))}" stroke="#e5e5e5"/>`,
      `<text x="${num(originX - 6)}" y="${num(py(tick) + 4)}" text-anchor="end" fill="#555">${tickLabel(tick)}</text>`,
    );
  }
  for (const tick of xTicks) {
    out.push(
      `<line x1="${num(px(tick))}" y1="${num(originY)}" x2="${num(px(tick))}" y2="${num(originY + 4)}" stroke="#555"/>`,
      `<text x="${num(px(tick))}" y="${num(originY + 16)}" text-anchor="middle" fill="#555">${tickLabel(tick)}</text>`,
    );
  }
  out.push(
    `<path d="M${num(originX)} ${num(top + MARGIN.top)}V${num(originY)}H${num(originX + PLOT_WIDTH)}" fill="none" stroke="#555"/>`,
    `<text x="${num(originX + PLOT_WIDTH / 2)}" y="${num(originY + 32)}" text-anchor="middle" fill="#555">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(${num(left + 14)} ${num(top + MARGIN.top + PLOT_HEIGHT / 2)}) rotate(-90)" text-anchor="middle" fill="#555">${escapeXml(options.yLabel)}</text>`,
  );
  if (panel.marker !== undefined) {
    const x = num(px(panel.marker.x));
    out.push(
      `<line class="marker" x1="${x}" y1="${num(originY)}" x2="${x}" y2="${num(top + MARGIN.top)}" stroke="#777" stroke-dasharray="4 3"/>`,
      `<text x="${num(px(panel.marker.x) + 4)}" y="${num(top + MARGIN.top + 12)}" fill="#555" stroke="#fff" stroke-width="3" paint-order="stroke">${escapeXml(panel.marker.label)}</text>`,
    );
  }
  panel.series.forEach((series, i) => {
    const dash = series.dash === undefined ? '' : ` stroke-dasharray="${escapeXml(series.dash)}"`;
    const stroke = `stroke="${escapeXml(series.color)}" stroke-width="2"${dash}`;
    if (series.points.length > 0) {
      const path = series.points.map(([x, y]) => `${num(px(x))},${num(py(y))}`).join(' ');
      out.push(
        `<polyline class="series" points="${path}" fill="none" ${stroke} stroke-linejoin="round"/>`,
      );
    }
    const legendY = originY + MARGIN.bottom + 4 + i * LEGEND_LINE;
    const note = series.note === undefined ? '' : `: ${series.note}`;
    out.push(
      `<line x1="${num(originX)}" y1="${num(legendY - 4)}" x2="${num(originX + 24)}" y2="${num(legendY - 4)}" ${stroke}/>`,
      `<text x="${num(originX + 30)}" y="${num(legendY)}">${escapeXml(`${series.label}${note}`)}</text>`,
    );
  });
  out.push('</g>');
  return out.join('\n');
}
