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
