import { describe, expect, it } from 'vitest';
import {
  kitCostLines,
  kitModes,
  kitRoundOrder,
  medianVariant,
  summarizeKitCost,
} from '../../bench/kit-cost.ts';

const round = (writesPerSecond: number, p99Ms: number, serverCpuUsPerWrite: number) => ({
  writesPerSecond,
  p99Ms,
  serverCpuUsPerWrite,
});

describe('kitModes and kitRoundOrder: which variants run, in which order', () => {
  it('measures the floor on PostgreSQL only', () => {
    expect(kitModes('postgres')).toEqual(['bare', 'floor', 'kit']);
    expect(kitModes('sqlite-full')).toEqual(['bare', 'kit']);
  });

  it('adds the baseline checkout last when there is one', () => {
    expect(kitModes('postgres', true)).toEqual(['bare', 'floor', 'kit', 'base']);
    expect(kitModes('sqlite-full', true)).toEqual(['bare', 'kit', 'base']);
  });

  it('runs every variant once per round, every other round in reverse', () => {
    const orders = [1, 2, 3].map((n) => kitRoundOrder(kitModes('postgres'), n).join(' '));
    expect(orders).toEqual(['bare floor kit', 'kit floor bare', 'bare floor kit']);
  });
});

describe('medianVariant: each measure its own median', () => {
  it('takes the middle of each measure, not the measures of one round', () => {
    const rounds = [round(300, 90, 900), round(100, 10, 700), round(200, 50, 800)];
    expect(medianVariant(rounds)).toEqual(round(200, 50, 800));
    const mixed = [round(300, 10, 800), round(100, 90, 900), round(200, 50, 700)];
    expect(medianVariant(mixed)).toEqual(round(200, 50, 800));
  });

  it('takes the lower middle of an even count', () => {
    expect(medianVariant([round(400, 4, 4), round(100, 1, 1)])).toEqual(round(100, 1, 1));
  });
});

describe('summarizeKitCost: the ratios between bare, floor and kit', () => {
  const postgres = summarizeKitCost('postgres', {
    bare: [round(1200, 100, 300)],
    floor: [round(800, 150, 600)],
    kit: [round(400, 300, 900)],
  });

  it('gives the kit over the bare write as the target reads it', () => {
    expect(postgres.costMultiple).toBe(3);
    expect(postgres.cpuMultiple).toBe(3);
  });

  it('splits it into what the ledger costs and what the kit adds above it', () => {
    expect(postgres.floorOverBare).toEqual({ writes: 1.5, cpu: 2 });
    expect(postgres.kitOverFloor).toEqual({ writes: 2, cpu: 1.5 });
  });

  it('keeps every round beside the medians', () => {
    expect(postgres.floor?.rounds).toEqual([round(800, 150, 600)]);
  });

  it('has no floor where none was measured', () => {
    const sqlite = summarizeKitCost('sqlite-full', {
      bare: [round(300, 700, 500)],
      kit: [round(600, 400, 400)],
    });
    expect(sqlite.floor).toBeUndefined();
    expect(sqlite.kitOverFloor).toBeUndefined();
    expect(sqlite.costMultiple).toBe(0.5);
    expect(sqlite.cpuMultiple).toBe(0.8);
  });

  it('says what a change saved against the baseline checkout', () => {
    const cost = summarizeKitCost('postgres', {
      bare: [round(1200, 100, 300)],
      kit: [round(600, 200, 600)],
      base: [round(400, 300, 900)],
    });
    expect(cost.baseOverKit).toEqual({ writes: 1.5, cpu: 1.5 });
    expect(kitCostLines([cost]).at(-1)).toContain('base ÷ kit 1.5× (cpu 1.5×)');
  });

  it('prints one line per variant, the ratios beside the floor and the kit', () => {
    const lines = kitCostLines([postgres]);
    expect(lines).toHaveLength(4);
    expect(lines[2]).toContain('floor ÷ bare 1.5× (cpu 2×)');
    expect(lines[3]).toContain('kit ÷ bare 3× (cpu 3×)');
    expect(lines[3]).toContain('kit ÷ floor 2× (cpu 1.5×)');
  });
});
