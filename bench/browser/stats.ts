/** Nearest-rank percentile of `values` (0 < p ≤ 100), rounded to `digits` decimals (0.01 ms). */
export function percentile(values: readonly number[], p: number, digits = 2): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return round(sorted[rank - 1]!, digits);
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** What repeated measurements of one quantity come to: their median and their range. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** How many measurements. */
  n: number;
}

/** The median (nearest rank) and range of `values`, rounded to `digits` decimals. */
export function spread(values: readonly number[], digits = 2): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  return {
    median: percentile(values, 50, digits),
    min: round(Math.min(...values), digits),
    max: round(Math.max(...values), digits),
    n: values.length,
  };
}
