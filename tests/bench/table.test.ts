import { describe, expect, it } from 'vitest';
import type { DrainResult } from '../../bench/browser/drain.ts';
import { type FloorResult, summarizeVariant } from '../../bench/browser/floor.ts';
import { drainCostLines } from '../../bench/browser/table.ts';

const result = (mode: 'batches' | 'single' | undefined, browserCpu: number): DrainResult => ({
  system: mode === undefined ? 'workbox' : 'outbox',
  ...(mode === undefined ? {} : { mode }),
  rows: 1000,
  latencyMs: 0,
  fillPerSecond: 1,
  drained: 1000,
  seconds: 2,
  rowsPerSecond: 500,
  complete: true,
  cpuMsPerRow: { browser: browserCpu, server: 0.3 },
  transactionsPerRow: { readonly: 0.02, readwrite: 0.03 },
  requestsPerRow: 4,
  batches: mode === 'batches' ? 20 : 0,
  progress: [
    [0, 0],
    [2, 1000],
  ],
});

const drains = [1000, 10_000].map((rows) => ({
  options: { rows, latencyMs: 0, capSeconds: 60 },
  batches: { ...result('batches', 2), rows },
  single: { ...result('single', 8), rows },
  workbox: { ...result(undefined, 12), rows },
  ratios: { batches: 10, single: 2 },
}));

const floor: FloorResult = {
  rowsPerTransaction: 50,
  sizes: [
    {
      rows: 1000,
      rounds: 1,
      bytes: { row: 1, claimed: 1, receipt: 1 },
      variants: [
        summarizeVariant('contract', 1000, [{ ms: 1000, cpuMs: 1600 }], {
          requests: 4000,
          transactions: 40,
        }),
      ],
    },
  ],
};

describe('drainCostLines: the cost per drained row, beside the floor when it ran', () => {
  it('shows every drain as a multiple of the floor measured at its row count', () => {
    const lines = drainCostLines({ drains, floor: { ...floor, besideDrain: [] } });
    expect(lines[1]).toContain('× floor');
    const cell = (label: string) =>
      lines.find((l) => l.includes(label))?.match(/([\d.]+×|—)\s+[\d.]+\s+0\.02\+0\.03/)?.[1];
    expect(cell('1,000 rows, +0 ms, batches')).toBe('1.25×');
    expect(cell('1,000 rows, +0 ms, single')).toBe('5.00×');
    expect(cell('1,000 rows, +0 ms, workbox')).toBe('7.50×');
    // The floor did not run at 10,000 rows.
    expect(cell('10,000 rows, +0 ms, batches')).toBe('—');
  });

  it('has no floor column when the floor did not run', () => {
    const lines = drainCostLines({ drains });
    expect(lines.join('\n')).not.toContain('floor');
    expect(lines).toHaveLength(2 + 6);
  });
});
