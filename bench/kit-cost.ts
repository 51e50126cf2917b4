/**
 * The kit's cost (SPEC §19: "the kit's ledger costs ≤ 1.3× a bare write"), summarised from the
 * rounds of bench/server.ts: one create route bare, through the kit and, on PostgreSQL, as the
 * contract's floor (the ledger's statements by hand, bench/kit-floor.ts), side by side.
 */

/** The stores the kit's cost is measured on. */
export type KitStore = 'sqlite-full' | 'postgres';

/**
 * How the route is served (bench/kit-process.ts): bare, the floor, the kit, and `base`, the kit of
 * an earlier checkout (`--kit-baseline`), to measure a change before and after in one run.
 */
export type KitMode = 'bare' | 'floor' | 'kit' | 'base';

/** One round of one variant, or the medians of its rounds. */
export interface KitVariant {
  writesPerSecond: number;
  p99Ms: number;
  serverCpuUsPerWrite: number;
}

/** One multiple between two variants: of writes/s (the slower's over the faster's) and of CPU. */
export interface KitRatio {
  /** Writes/s of the cheaper variant over the dearer one's. */
  writes: number;
  /** Server CPU per write of the dearer variant over the cheaper one's. */
  cpu: number;
}

/** The kit's cost on one store: each variant's medians and rounds, and the ratios between them. */
export interface KitCost {
  store: KitStore;
  bare: KitVariant & { rounds: KitVariant[] };
  kit: KitVariant & { rounds: KitVariant[] };
  /** PostgreSQL only: the contract's floor. */
  floor?: KitVariant & { rounds: KitVariant[] };
  /** The kit of the baseline checkout, when one was given. */
  base?: KitVariant & { rounds: KitVariant[] };
  /** Bare writes/s over the kit's: the kit's cost as a multiple of a bare write (≤ 1.3). */
  costMultiple: number;
  /** The kit's server CPU per write over the bare write's. */
  cpuMultiple: number;
  /** What the ledger itself costs in this store: the floor against the bare write. */
  floorOverBare?: KitRatio;
  /** What the kit's own code costs: the kit against the floor. */
  kitOverFloor?: KitRatio;
  /** What a change saved: the baseline's kit against this one (above 1: this one is cheaper). */
  baseOverKit?: KitRatio;
}

/**
 * The variants measured on a store: the floor is PostgreSQL's (SQLite's kit beats bare), the
 * baseline's kit only when there is one.
 */
export function kitModes(store: KitStore, withBase = false): KitMode[] {
  const modes: KitMode[] = store === 'postgres' ? ['bare', 'floor', 'kit'] : ['bare', 'kit'];
  return withBase ? [...modes, 'base'] : modes;
}

/**
 * The order of the variants in round `round` (from 1): every other round reversed (bare floor
 * kit, kit floor bare, …), so a load that drifts during the run weighs on each variant alike.
 */
export function kitRoundOrder(modes: readonly KitMode[], round: number): KitMode[] {
  return round % 2 === 1 ? [...modes] : [...modes].reverse();
}

/** The median of each measure on its own (nearest rank, the lower middle of an even count). */
export function medianVariant(rounds: readonly KitVariant[]): KitVariant {
  const median = (pick: (round: KitVariant) => number) => {
    const sorted = rounds.map(pick).sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
  };
  return {
    writesPerSecond: median((round) => round.writesPerSecond),
    p99Ms: median((round) => round.p99Ms),
    serverCpuUsPerWrite: median((round) => round.serverCpuUsPerWrite),
  };
}

const twoDigits = (value: number) => Math.round(value * 100) / 100;

/** How much dearer `dear` is than `cheap`, in writes/s and in CPU per write. */
export function ratio(cheap: KitVariant, dear: KitVariant): KitRatio {
  return {
    writes: twoDigits(cheap.writesPerSecond / dear.writesPerSecond),
    cpu: twoDigits(dear.serverCpuUsPerWrite / cheap.serverCpuUsPerWrite),
  };
}

/** The kit's cost on a store from every round of its variants. */
export function summarizeKitCost(
  store: KitStore,
  rounds: Partial<Record<KitMode, KitVariant[]>>,
): KitCost {
  const summary = (mode: KitMode) => {
    const list = rounds[mode] ?? [];
    return { ...medianVariant(list), rounds: list };
  };
  const bare = summary('bare');
  const kit = summary('kit');
  const overBare = ratio(bare, kit);
  const cost: KitCost = {
    store,
    bare,
    kit,
    costMultiple: overBare.writes,
    cpuMultiple: overBare.cpu,
  };
  if (rounds.floor && rounds.floor.length > 0) {
    const floor = summary('floor');
    cost.floor = floor;
    cost.floorOverBare = ratio(bare, floor);
    cost.kitOverFloor = ratio(floor, kit);
  }
  if (rounds.base && rounds.base.length > 0) {
    cost.base = summary('base');
    cost.baseOverKit = ratio(kit, cost.base);
  }
  return cost;
}

/** The table bench/server.ts prints, one line per variant. */
export function kitCostLines(costs: readonly KitCost[]): string[] {
  const lines = [
    'kit cost       variant   writes/s   p99 ms   µs cpu/write   multiple (writes/s; cpu/write)',
  ];
  for (const cost of costs) {
    for (const mode of kitModes(cost.store, cost.base !== undefined)) {
      const variant = cost[mode];
      if (!variant) continue;
      const cells = [
        cost.store.padEnd(14),
        mode.padEnd(7),
        String(variant.writesPerSecond).padStart(10),
        variant.p99Ms.toFixed(2).padStart(8),
        String(variant.serverCpuUsPerWrite).padStart(14),
      ];
      const notes: string[] = [];
      if (mode === 'floor' && cost.floorOverBare) {
        notes.push(`floor ÷ bare ${formatRatio(cost.floorOverBare)}`);
      }
      if (mode === 'kit') {
        notes.push(
          `kit ÷ bare ${formatRatio({ writes: cost.costMultiple, cpu: cost.cpuMultiple })} (target ≤ 1.3×)`,
        );
        if (cost.kitOverFloor) notes.push(`kit ÷ floor ${formatRatio(cost.kitOverFloor)}`);
      }
      if (mode === 'base' && cost.baseOverKit) {
        notes.push(`base ÷ kit ${formatRatio(cost.baseOverKit)}`);
      }
      lines.push(`${cells.join(' ')}${notes.length > 0 ? `   ${notes.join('; ')}` : ''}`);
    }
  }
  return lines;
}

function formatRatio({ writes, cpu }: KitRatio): string {
  return `${writes}× (cpu ${cpu}×)`;
}
