/** Nearest-rank percentile of `values` (0 < p ≤ 100), rounded to 0.01 ms. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return Math.round(sorted[rank - 1]! * 100) / 100;
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
  const scale = 10 ** digits;
  const at = (value: number) => Math.round(value * scale) / scale;
  const sorted = [...values].sort((a, b) => a - b);
  return {
    median: at(sorted[Math.ceil(sorted.length / 2) - 1]!),
    min: at(sorted[0]!),
    max: at(sorted[sorted.length - 1]!),
    n: values.length,
  };
}
