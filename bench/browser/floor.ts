import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_BATCH } from '../../shared/plan/batch-groups.ts';
import {
  FLOOR_VARIANT_IDS,
  FLOOR_VARIANTS,
  type FloorVariant,
  roundOrder,
} from './app/floor-variants.ts';
import type { FloorPrepared, FloorRun } from './app/protocol.ts';
import { outboxHooks, withProfile } from './chromium.ts';
import { CPU_SPLIT_KEYS, type CpuSplit, cpuSplit, threadTimesSince } from './cpu.ts';
import type { DrainComparison, DrainOptions } from './drain.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser, round } from './session.ts';
import { type Spread, spread } from './stats.ts';

/**
 * The IndexedDB floor of the per-row contract (issue 16): what the IndexedDB requests a batched
 * drain must make per row cost by themselves, in the same browser, on rows of the same shape and
 * size as the drain's — so the drain's targets (rows/s, browser CPU per row) can be read
 * against what the contract of SPEC §4/§5 leaves possible at all.
 *
 * First the bench's outbox worker (its flush triggers kept out, so nothing drains) fills the
 * largest size's rows with the engine's own `enqueue`, as the drain bench fills its queue, and
 * hands them back as stored. Then each measurement gets a fresh persistent profile with the same
 * worker, which copies the first `rows` of them into a fresh database of the engine's schema and
 * runs one variant (`app/floor.ts`): rows/s is timed in the worker around the IndexedDB requests
 * alone, browser CPU is every Chromium process's (`/proc`) over the same call. The variants run
 * in rounds, every other round in reverse order.
 */

export interface FloorOptions {
  sizes: Array<{ rows: number; rounds: number }>;
}

/** One variant at one size: the median and range over its rounds. */
export interface FloorVariantResult {
  variant: FloorVariant;
  label: string;
  rowsPerSecond: Spread;
  /** Browser CPU ms per row, every Chromium process (undefined without /proc). */
  cpuMsPerRow?: Spread;
  /** IndexedDB requests and transactions the variant issued per row. */
  requestsPerRow: number;
  transactionsPerRow: number;
  /** Browser CPU ms per row by thread, each part the median of the rounds (`cpuSplit`). */
  cpuByThread?: CpuSplit;
  samples: Array<{ ms: number; cpuMs?: number; byThread?: CpuSplit }>;
}

export interface FloorSizeResult {
  rows: number;
  rounds: number;
  /** JSON bytes of one row as the engine stored it, as its claim writes it, and its receipt. */
  bytes: FloorPrepared['bytes'];
  variants: FloorVariantResult[];
}

export interface FloorResult {
  rowsPerTransaction: number;
  sizes: FloorSizeResult[];
}

/** The batched drain of the same run beside the floor at one size (+0 ms). */
export interface FloorBeside {
  rows: number;
  /** The drain measured this long a window: its rate with `rows` queued, maybe not all drained. */
  drain: { rowsPerSecond: number; cpuMsPerRow?: number; requestsPerRow: number };
  /** Per variant: the drain's rows/s over the floor's, and its CPU per row over the floor's. */
  ratios: Array<{ variant: FloorVariant; rowsPerSecond: number; cpuMsPerRow?: number }>;
}

export async function measureFloor(
  server: BenchServer,
  options: FloorOptions,
): Promise<FloorResult> {
  const largest = Math.max(...options.sizes.map((s) => s.rows));
  // The drain's owner is `…-drain-<rows>-0-batches`: one of the same length owns these rows.
  const user = freshUser(`floor-${largest}-0-batches`);
  const templates = await withProfile(server.url, async (profile) => {
    const worker = await connectOutbox(server, profile, user, { flush: false });
    await outboxHooks(worker, (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0), [
      user,
      largest,
    ]);
    const stored = await outboxHooks(
      worker,
      (hooks, owner: string) => hooks.storedRows(owner),
      user,
    );
    return JSON.parse(stored) as unknown[];
  });
  if (templates.length !== largest)
    throw new Error(`filled ${templates.length} of ${largest} rows`);
  const sizes: FloorSizeResult[] = [];
  for (const { rows, rounds } of options.sizes) {
    const samples = new Map<FloorVariant, FloorVariantResult['samples']>(
      FLOOR_VARIANT_IDS.map((v) => [v, []]),
    );
    const issued = new Map<FloorVariant, { requests: number; transactions: number }>();
    let bytes: FloorPrepared['bytes'] | undefined;
    for (let r = 0; r < rounds; r++) {
      for (const variant of roundOrder(FLOOR_VARIANT_IDS, r)) {
        const { prepared, run, cpuMs, threads } = await measureOnce(
          server,
          user,
          templates.slice(0, rows),
          variant,
        );
        bytes ??= prepared.bytes;
        samples.get(variant)!.push({
          ms: round(run.ms, 1),
          ...(cpuMs === undefined ? {} : { cpuMs }),
          ...(threads.length > 0 ? { byThread: cpuSplit(threads, rows) } : {}),
        });
        issued.set(variant, { requests: run.requests, transactions: run.transactions });
      }
    }
    sizes.push({
      rows,
      rounds,
      bytes: bytes!,
      variants: FLOOR_VARIANT_IDS.map((variant) =>
        summarizeVariant(variant, rows, samples.get(variant)!, issued.get(variant)!),
      ),
    });
  }
  return { rowsPerTransaction: DEFAULT_BATCH.maxRows, sizes };
}

/**
 * One variant in a profile of its own, as every drain gets one: the databases of an origin
 * share one backing store in Chromium, and a database deleted before left work to the next
 * measurement (measured here: the contract's CPU per row went from 0.83–0.94 ms for
 * the first three databases made and deleted in one profile to 1.13–1.33 for the next three).
 */
async function measureOnce(
  server: BenchServer,
  user: string,
  templates: unknown[],
  variant: FloorVariant,
): Promise<{
  prepared: FloorPrepared;
  run: FloorRun;
  cpuMs: number | undefined;
  threads: ReturnType<typeof threadTimesSince>;
}> {
  return withProfile(server.url, async (profile) => {
    const worker = await connectOutbox(server, profile, user, { flush: false });
    await outboxHooks(
      worker,
      (hooks, rows: string) => hooks.floorTemplates(rows),
      JSON.stringify(templates),
    );
    const prepared = await outboxHooks(
      worker,
      (hooks, [v, n]: [FloorVariant, number]) => hooks.floorPrepare(v, n),
      [variant, templates.length],
    );
    // The copy has committed; let what the backend does after it pass the window by.
    await sleep(QUIET_MS);
    const before = profile.cpuMs();
    const threadsBefore = profile.threads();
    const run = await outboxHooks(worker, (hooks) => hooks.floorRun());
    const after = profile.cpuMs();
    const threads = threadTimesSince(threadsBefore, profile.threads());
    const cpuMs = before === undefined || after === undefined ? undefined : after - before;
    return { prepared, run, cpuMs, threads };
  });
}

/** A variant's rounds as rates and costs per row: median and range of each. */
export function summarizeVariant(
  variant: FloorVariant,
  rows: number,
  samples: FloorVariantResult['samples'],
  issued: { requests: number; transactions: number },
): FloorVariantResult {
  const cpu = samples.flatMap((s) => (s.cpuMs === undefined ? [] : [s.cpuMs / rows]));
  const splits = samples.flatMap((s) => (s.byThread === undefined ? [] : [s.byThread]));
  const byThread =
    splits.length === samples.length && splits.length > 0
      ? (Object.fromEntries(
          CPU_SPLIT_KEYS.map((key) => [
            key,
            spread(
              splits.map((s) => s[key]),
              3,
            ).median,
          ]),
        ) as unknown as CpuSplit)
      : undefined;
  return {
    variant,
    label: FLOOR_VARIANTS[variant],
    rowsPerSecond: spread(
      samples.map((s) => (rows * 1000) / s.ms),
      1,
    ),
    ...(cpu.length === samples.length && cpu.length > 0 ? { cpuMsPerRow: spread(cpu, 2) } : {}),
    ...(byThread === undefined ? {} : { cpuByThread: byThread }),
    requestsPerRow: round(issued.requests / rows, 2),
    transactionsPerRow: round(issued.transactions / rows, 3),
    samples,
  };
}

/**
 * The batched drain of the same run (at +0 ms, same row count) beside each floor variant:
 * engine / floor for rows/s and for browser CPU per row. Sizes the drain did not run are left out.
 */
export function floorBesideDrain(
  floor: FloorResult,
  drains: ReadonlyArray<{ options: DrainOptions } & DrainComparison> | undefined,
): FloorBeside[] {
  const out: FloorBeside[] = [];
  for (const size of floor.sizes) {
    const drain = drains?.find((d) => d.options.rows === size.rows && d.options.latencyMs === 0);
    if (drain === undefined) continue;
    const { rowsPerSecond, cpuMsPerRow, requestsPerRow } = drain.batches;
    const cpu = cpuMsPerRow?.browser;
    out.push({
      rows: size.rows,
      drain: { rowsPerSecond, ...(cpu === undefined ? {} : { cpuMsPerRow: cpu }), requestsPerRow },
      ratios: size.variants.map((v) => ({
        variant: v.variant,
        rowsPerSecond: round(rowsPerSecond / v.rowsPerSecond.median, 2),
        ...(cpu === undefined || v.cpuMsPerRow === undefined
          ? {}
          : { cpuMsPerRow: round(cpu / v.cpuMsPerRow.median, 2) }),
      })),
    });
  }
  return out;
}

/**
 * A drain's browser CPU per row as a multiple of the floor's (SPEC §19): over the median of the
 * per-row contract's own requests (`contract`) measured at the same row count in the same run.
 * Undefined when the floor did not run at that count, or either CPU is unknown.
 */
export function cpuOverFloor(
  floor: Pick<FloorResult, 'sizes'> | undefined,
  rows: number,
  cpuMsPerRow: number | undefined,
): number | undefined {
  const size = floor?.sizes.find((s) => s.rows === rows);
  const contract = size?.variants.find((v) => v.variant === 'contract')?.cpuMsPerRow?.median;
  if (cpuMsPerRow === undefined || contract === undefined || !(contract > 0)) return undefined;
  return round(cpuMsPerRow / contract, 2);
}

/** A pause between a database's copy and its timed run. */
const QUIET_MS = 200;
