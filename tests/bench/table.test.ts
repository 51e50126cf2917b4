import { describe, expect, it } from 'vitest';
import { cpuSplit } from '../../bench/browser/cpu.ts';
import type { DrainResult } from '../../bench/browser/drain.ts';
import { type FloorResult, summarizeVariant } from '../../bench/browser/floor.ts';
import { cpuSplitLines, drainCostLines } from '../../bench/browser/table.ts';

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

describe('cpuSplit and cpuSplitLines: where a row’s browser CPU goes, by thread', () => {
  it('sums thread groups into the IndexedDB backend, the worker, and the rest, per row', () => {
    const split = cpuSplit(
      [
        { group: 'browser/ThreadPoolForeg', runMs: 600 },
        { group: 'browser/ThreadPoolBackg', runMs: 20 },
        { group: 'renderer/ServiceWorker t', runMs: 400 },
        { group: 'renderer/Chrome_ChildIOT', runMs: 120 },
        { group: 'renderer/chromium', runMs: 10 },
        { group: 'browser/Chrome_IOThread', runMs: 90 },
        { group: 'network/Chrome_ChildIOT', runMs: 40 },
      ],
      1000,
    );
    expect(split).toEqual({
      backend: 0.62,
      worker: 0.4,
      renderer: 0.13,
      browser: 0.09,
      other: 0.04,
    });
  });

  it('prints each batched drain and the floor with and without §6.1, each with its total', () => {
    const byThread = { backend: 0.6, worker: 0.4, renderer: 0.25, browser: 0.1, other: 0.05 };
    const floorSplit = { backend: 0.3, worker: 0.1, renderer: 0.1, browser: 0.05, other: 0 };
    const withSplit = drains.map((d) => ({
      ...d,
      batches: { ...d.batches, cpuByThread: byThread },
    }));
    const sample = { ms: 1000, cpuMs: 600, byThread: floorSplit };
    const issued = { requests: 4000, transactions: 40 };
    const lines = cpuSplitLines({
      drains: withSplit,
      floor: {
        ...floor,
        sizes: [
          {
            ...floor.sizes[0]!,
            variants: [
              summarizeVariant('contract', 1000, [sample, sample], issued),
              summarizeVariant('contract-with-names', 1000, [sample], issued),
            ],
          },
        ],
        besideDrain: [],
      },
    });
    expect(lines[1]).toContain('browser pool (IndexedDB)');
    const numbers = (label: string) =>
      lines
        .find((l) => l.includes(label))
        ?.slice(44)
        .trim()
        .split(/\s+/);
    expect(numbers('drain, 1,000 rows, +0 ms, batches')).toEqual([
      '1.40',
      '0.60',
      '0.40',
      '0.25',
      '0.10',
      '0.05',
    ]);
    expect(numbers('drain, 10,000 rows, +0 ms, batches')).toHaveLength(6);
    expect(numbers('floor, 1,000 rows: contract (§4/§5)')).toEqual([
      '0.55',
      '0.30',
      '0.10',
      '0.10',
      '0.05',
      '0.00',
    ]);
    expect(numbers('floor, 1,000 rows: contract + §6.1')).toHaveLength(6);
    expect(cpuSplitLines({ drains: [], floor: undefined })).toEqual([]);
  });
});
