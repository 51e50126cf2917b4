import { describe, expect, it } from 'vitest';
import { FLOOR_VARIANT_IDS, roundOrder } from '../../bench/browser/app/floor-variants.ts';
import type { DrainResult } from '../../bench/browser/drain.ts';
import {
  cpuOverFloor,
  type FloorResult,
  floorBesideDrain,
  summarizeVariant,
} from '../../bench/browser/floor.ts';
import { spread } from '../../bench/browser/stats.ts';

describe('spread: the median and range of repeated measurements', () => {
  const cases: { name: string; values: number[]; digits?: number; expected: object }[] = [
    {
      name: 'an odd count has its middle value as the median',
      values: [3, 1, 2],
      expected: { median: 2, min: 1, max: 3, n: 3 },
    },
    {
      name: 'an even count takes the lower of the two middle values (nearest rank)',
      values: [4, 1, 3, 2],
      expected: { median: 2, min: 1, max: 4, n: 4 },
    },
    {
      name: 'values are rounded to the digits asked for',
      values: [1.234, 1.236],
      digits: 2,
      expected: { median: 1.23, min: 1.23, max: 1.24, n: 2 },
    },
    {
      name: 'no values give no numbers',
      values: [],
      expected: { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 },
    },
  ];
  it.each(cases)('$name', ({ values, digits, expected }) => {
    expect(spread(values, digits)).toEqual(expected);
  });

  it('leaves the measurements it summarises in their order', () => {
    const values = [3, 1, 2];
    spread(values);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('roundOrder: variants interleaved over rounds', () => {
  it('runs every variant once per round, every other round in reverse', () => {
    const rounds = [0, 1, 2, 3].map((r) => roundOrder(['A', 'B', 'C'], r).join(''));
    expect(rounds).toEqual(['ABC', 'CBA', 'ABC', 'CBA']);
  });

  it('puts each variant at the same mean position over two rounds', () => {
    const position = (v: string) =>
      [0, 1].reduce((sum, r) => sum + roundOrder(FLOOR_VARIANT_IDS, r).indexOf(v as never), 0);
    const positions = new Set(FLOOR_VARIANT_IDS.map(position));
    expect(positions.size).toBe(1);
  });
});

describe('summarizeVariant: rounds as rates and costs per row', () => {
  const samples = [
    { ms: 1000, cpuMs: 1500 },
    { ms: 500, cpuMs: 1000 },
    { ms: 800, cpuMs: 1200 },
  ];

  it('gives rows/s and browser CPU per row as median and range', () => {
    const result = summarizeVariant('contract', 1000, samples, {
      requests: 4000,
      transactions: 40,
    });
    expect(result.rowsPerSecond).toEqual({ median: 1250, min: 1000, max: 2000, n: 3 });
    expect(result.cpuMsPerRow).toEqual({ median: 1.2, min: 1, max: 1.5, n: 3 });
    expect(result.requestsPerRow).toBe(4);
    expect(result.transactionsPerRow).toBe(0.04);
  });

  it('reports no CPU when a round could not read it', () => {
    const partial = [...samples.slice(1), { ms: 900 }];
    const result = summarizeVariant('contract', 1000, partial, {
      requests: 4000,
      transactions: 40,
    });
    expect(result.cpuMsPerRow).toBeUndefined();
  });
});

describe('floorBesideDrain: engine / floor in one run', () => {
  const variant = (rowsPerSecond: number, cpu: number) =>
    summarizeVariant('contract', 1000, [{ ms: 1000_000 / rowsPerSecond, cpuMs: cpu * 1000 }], {
      requests: 4000,
      transactions: 40,
    });
  const floor: FloorResult = {
    rowsPerTransaction: 50,
    sizes: [
      {
        rows: 1000,
        rounds: 1,
        bytes: { row: 1, claimed: 1, receipt: 1 },
        variants: [variant(1000, 1.5)],
      },
      {
        rows: 10_000,
        rounds: 1,
        bytes: { row: 1, claimed: 1, receipt: 1 },
        variants: [variant(1000, 1.5)],
      },
    ],
  };
  const batches = {
    rowsPerSecond: 500,
    cpuMsPerRow: { browser: 2.25, server: 0.3 },
    requestsPerRow: 4.1,
  } as DrainResult;
  const drain = (rows: number, latencyMs: number) => ({
    options: { rows, latencyMs, capSeconds: 60 },
    batches,
    single: batches,
    workbox: batches,
    ratios: { batches: 1, single: 1 },
  });

  it('sets the batched drain at +0 ms of the same row count beside each variant', () => {
    expect(floorBesideDrain(floor, [drain(1000, 50), drain(1000, 0)])).toEqual([
      {
        rows: 1000,
        drain: { rowsPerSecond: 500, cpuMsPerRow: 2.25, requestsPerRow: 4.1 },
        ratios: [{ variant: 'contract', rowsPerSecond: 0.5, cpuMsPerRow: 1.5 }],
      },
    ]);
  });

  it('has nothing beside the floor when the drain did not run', () => {
    expect(floorBesideDrain(floor, undefined)).toEqual([]);
  });
});

describe("cpuOverFloor: a drain's CPU per row as a multiple of the contract's", () => {
  const size = (
    rows: number,
    variants: Array<[FloorResult['sizes'][number]['variants'][number]['variant'], number]>,
  ) => ({
    rows,
    rounds: 1,
    bytes: { row: 1, claimed: 1, receipt: 1 },
    variants: variants.map(([v, cpu]) =>
      summarizeVariant(v, rows, [{ ms: 1000, cpuMs: cpu * rows }], {
        requests: rows,
        transactions: 1,
      }),
    ),
  });
  const floor = {
    sizes: [
      size(1000, [
        ['claim-only', 0.4],
        ['contract', 1.6],
      ]),
      size(10_000, [['contract', 2]]),
    ],
  };

  it.each([
    {
      name: 'over the contract variant, not the first one measured',
      rows: 1000,
      cpu: 2,
      multiple: 1.25,
    },
    { name: 'at the floor measured with the same row count', rows: 10_000, cpu: 2, multiple: 1 },
    {
      name: 'none where the floor did not run at that row count',
      rows: 500,
      cpu: 2,
      multiple: undefined,
    },
    {
      name: 'none when the drain could not read its CPU',
      rows: 1000,
      cpu: undefined,
      multiple: undefined,
    },
  ])('$name', ({ rows, cpu, multiple }) => {
    expect(cpuOverFloor(floor, rows, cpu)).toBe(multiple);
  });

  it('is none without the floor in the run', () => {
    expect(cpuOverFloor(undefined, 1000, 2)).toBeUndefined();
  });
});
