/**
 * `npm run bench` (SPEC §19): builds the bench bundles, runs the browser benchmarks — our outbox
 * side by side with workbox-background-sync's Queue on the same requests and the same server —
 * then the server load bench (`bench/server.ts`), writes JSON to `bench/results/` and prints a
 * table. Loopback only; bounded: about 28 minutes on 2 cores, `--quick` about 9 (phone, mostly
 * Workbox waiting on 500 answers 200 ms late, about 3 of them in both).
 *
 *   npm run bench [-- --quick] [-- --only enqueue,drain,phone,floor,live-view,loss,first-batch,first-call,outage,server]
 *   npm run bench -- --quick --only drain --rows 50   # a scratch run: every drain of 50 rows
 *   npm run bench -- --only enqueue-trace    # not in the default run: where the enqueue tail comes from
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CHROMIUM_PATH } from '../e2e/support/chromium.ts';
import {
  type DrainComparison,
  type DrainOptions,
  type DrainResult,
  measureDrain,
  measureLiveViewDrain,
} from './browser/drain.ts';
import { drainChartSvg } from './browser/drain-chart.ts';
import { type EnqueueResult, measureEnqueue } from './browser/enqueue.ts';
import { type EnqueueTraceResult, measureEnqueueTrace } from './browser/enqueue-trace.ts';
import { type FirstBatchResult, measureFirstBatch } from './browser/first-batch.ts';
import { type FirstCallResult, measureFirstCall } from './browser/first-call.ts';
import {
  type FloorBeside,
  type FloorResult,
  floorBesideDrain,
  measureFloor,
} from './browser/floor.ts';
import { type LossResult, measureLoss } from './browser/loss.ts';
import { measureOutageDrain, type OutageResult } from './browser/outage.ts';
import { measurePhone, type PhoneResult } from './browser/phone.ts';
import { BenchServer } from './browser/server.ts';
import { printTable } from './browser/table.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = join(ROOT, 'bench', 'results');
const PARTS = [
  'enqueue',
  'drain',
  'phone',
  'floor',
  'live-view',
  'loss',
  'first-batch',
  'first-call',
  'outage',
  'server',
] as const;
/** Parts run only when `--only` names them. */
const EXTRA_PARTS = ['enqueue-trace'] as const;
type Part = (typeof PARTS)[number] | (typeof EXTRA_PARTS)[number];
const ALL_PARTS: readonly Part[] = [...PARTS, ...EXTRA_PARTS];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    /** Every drain of the `drain` part with this many rows: a scratch run, not a result. */
    rows: { type: 'string' },
  },
});
const quick = values.quick === true;
const drainRows = values.rows === undefined ? undefined : Number(values.rows);
if (drainRows !== undefined && !(Number.isInteger(drainRows) && drainRows > 0))
  throw new Error(`--rows takes a positive whole number; got ${values.rows}`);
const only = new Set((values.only?.split(',') ?? PARTS) as Part[]);
for (const part of only) {
  if (!ALL_PARTS.includes(part))
    throw new Error(`--only takes ${ALL_PARTS.join(',')}; got ${part}`);
}

/** What each mode measures; the full run is what bench/README.md reports. */
const PLAN = quick
  ? {
      enqueue: { calls: 200, concurrentCalls: 400 },
      enqueueTrace: { calls: 200 },
      drains: [
        { rows: 1_000, latencyMs: 0, capSeconds: 60 },
        { rows: 1_000, latencyMs: 50, capSeconds: 20 },
      ],
      // Workbox needs about 110 s for 500 rows at +200 ms: the phone part lets it finish.
      phone: { capSeconds: 240 },
      liveView: { rows: 1_000, latencyMs: 0, capSeconds: 60 },
      floor: { sizes: [{ rows: 1_000, rounds: 3 }] },
      loss: { rows: 300, dropRate: 0.1 },
      firstBatch: { sizes: [1_000, 100_000], reps: 7 },
      firstCall: { samples: 30 },
      outage: { rows: 100, outageMs: 20_000, capSeconds: 120 },
      serverArgs: ['--seconds', '3', '--storm', '50'],
    }
  : {
      enqueue: { calls: 500, concurrentCalls: 1_000 },
      enqueueTrace: { calls: 500 },
      drains: [
        { rows: 1_000, latencyMs: 0, capSeconds: 120 },
        // Workbox needs about 150 s for all of these: a 60 s window gives its rate with 10,000
        // rows queued (its rate only falls as its deleted entries pile up).
        { rows: 10_000, latencyMs: 0, capSeconds: 60 },
        { rows: 1_000, latencyMs: 50, capSeconds: 120 },
        // Workbox needs ~10 minutes for all of these, single requests ~140 s: a 45 s window
        // gives the rate with 10,000 rows queued.
        { rows: 10_000, latencyMs: 50, capSeconds: 45 },
      ],
      phone: { capSeconds: 240 },
      liveView: { rows: 1_000, latencyMs: 0, capSeconds: 120 },
      floor: {
        sizes: [
          { rows: 1_000, rounds: 5 },
          { rows: 10_000, rounds: 3 },
        ],
      },
      loss: { rows: 1_000, dropRate: 0.1 },
      firstBatch: { sizes: [1_000, 100_000], reps: 15 },
      firstCall: { samples: 100 },
      outage: { rows: 100, outageMs: 20_000, capSeconds: 120 },
      serverArgs: [],
    };

export interface BrowserResults {
  date: string;
  mode: 'full' | 'quick';
  machine: { cpus: number; node: string; chromium: string; loadavgBefore: number[] };
  enqueue?: EnqueueResult[];
  /** Online enqueue traced: where each call's time went (the raw timeline in its own file). */
  enqueueTrace?: Omit<EnqueueTraceResult, 'raw'>;
  /** Each drain three ways in one run: our batches, our single requests, Workbox. */
  drains?: Array<{ options: DrainOptions } & DrainComparison>;
  /** 500 rows at +200 ms, the same three ways: the time until all are applied (SPEC §19). */
  phone?: PhoneResult;
  /** Our drain without and with an unfiltered live view open in the page, in one run. */
  liveView?: { options: DrainOptions; without: DrainResult; watched: DrainResult; ratio: number };
  /**
   * The IndexedDB requests of the per-row contract alone, per variant, and the batched drain of
   * the same run beside them (the sizes it drained at +0 ms).
   */
  floor?: FloorResult & { besideDrain: FloorBeside[] };
  loss?: { batches: LossResult; single: LossResult; workbox: LossResult };
  firstBatch?: FirstBatchResult[];
  outage?: OutageResult;
  /** The first page call after the worker was stopped, beside calls to a live worker (§13.1). */
  firstCall?: FirstCallResult;
  /** Parts that failed, with their error: the others' results are kept and printed. */
  failed?: Array<{ part: string; error: string }>;
  loadavgAfter?: number[];
}

function build(): void {
  const rollup = createRequire(import.meta.url).resolve('rollup/dist/bin/rollup');
  execFileSync(process.execPath, [rollup, '-c', 'bench/rollup.config.mjs', '--silent'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}

function chromiumVersion(): string {
  try {
    return execFileSync(CHROMIUM_PATH, ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'unknown';
  }
}

const log = (message: string) => console.log(`[bench] ${message}`);

/** Where the browser results go: written after every part, and once more at the end. */
const partialFile = () => join(RESULTS, quick ? 'browser-quick.json' : 'browser.json');

async function runBrowser(): Promise<BrowserResults> {
  const results: BrowserResults = {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    machine: {
      cpus: cpus().length,
      node: process.version,
      chromium: chromiumVersion(),
      loadavgBefore: loadavg(),
    },
  };
  const server = await BenchServer.start(ROOT);
  // One part that fails (a worker the browser stopped, say) loses only its own numbers: the run
  // goes on, and what is done so far is written after every part.
  const part = async (name: Part, measure: () => Promise<void>) => {
    if (!only.has(name)) return;
    try {
      await measure();
    } catch (error) {
      log(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      results.failed = [...(results.failed ?? []), { part: name, error: String(error) }];
    }
    writeFileSync(partialFile(), `${JSON.stringify(results, null, 2)}\n`);
  };
  try {
    await part('enqueue', async () => {
      log('enqueue latency');
      results.enqueue = await measureEnqueue(server, PLAN.enqueue);
    });
    await part('enqueue-trace', async () => {
      log('online enqueue, traced');
      const { raw, ...traced } = await measureEnqueueTrace(server, PLAN.enqueueTrace);
      results.enqueueTrace = traced;
      writeFileSync(join(RESULTS, 'enqueue-trace.json'), `${JSON.stringify(raw)}\n`);
    });
    await part('drain', async () => {
      results.drains = [];
      const drains = PLAN.drains.map((d) => ({ ...d, rows: drainRows ?? d.rows }));
      for (const options of drains) {
        log(`flush throughput: ${options.rows} rows, +${options.latencyMs} ms`);
        results.drains.push({ options, ...(await measureDrain(server, options)) });
      }
    });
    await part('phone', async () => {
      log('phone-like latency: 500 rows, +200 ms');
      results.phone = await measurePhone(server, PLAN.phone);
    });
    await part('floor', async () => {
      log(
        `IndexedDB floor: ${PLAN.floor.sizes.map((s) => `${s.rows} rows × ${s.rounds}`).join(', ')}`,
      );
      const floor = await measureFloor(server, PLAN.floor);
      results.floor = { ...floor, besideDrain: floorBesideDrain(floor, results.drains) };
    });
    await part('live-view', async () => {
      const options = PLAN.liveView;
      log(`flush throughput with a live view open: ${options.rows} rows, +${options.latencyMs} ms`);
      const [without, watched] = await measureLiveViewDrain(server, options, 'batches');
      const ratio = Math.round((watched.rowsPerSecond / without.rowsPerSecond) * 100) / 100;
      results.liveView = { options, without, watched, ratio };
    });
    await part('loss', async () => {
      log(`duplicate effects under ${PLAN.loss.dropRate * 100} % response loss`);
      results.loss = await measureLoss(server, PLAN.loss);
    });
    await part('first-batch', async () => {
      log(`first batch with ${PLAN.firstBatch.sizes.join(' / ')} rows queued`);
      results.firstBatch = await measureFirstBatch(server, PLAN.firstBatch);
    });
    await part('first-call', async () => {
      log(`first call after a worker stop: ${PLAN.firstCall.samples} stops`);
      results.firstCall = await measureFirstCall(server, PLAN.firstCall);
    });
    await part('outage', async () => {
      const { rows, outageMs } = PLAN.outage;
      log(`drain after an outage: ${rows} rows, server unreachable for ${outageMs / 1000} s`);
      results.outage = await measureOutageDrain(server, PLAN.outage);
    });
  } finally {
    await server.stop();
  }
  results.loadavgAfter = loadavg();
  return results;
}

/** The server engineer's load bench, in its own process; it writes bench/results/server.json. */
function runServerBench(): unknown {
  const script = join(ROOT, 'bench', 'server.ts');
  if (!existsSync(script)) {
    log('bench/server.ts does not exist: skipping the server bench');
    return undefined;
  }
  log('server bench (bench/server.ts)');
  const run = spawnSync(process.execPath, ['--import', 'tsx', script, ...PLAN.serverArgs], {
    cwd: ROOT,
    stdio: 'inherit',
    // Single writes and two batch sizes per adapter and round, then the kit's cost: about five
    // minutes.
    timeout: 10 * 60_000,
  });
  if (run.status !== 0) {
    log(`bench/server.ts exited with ${run.status ?? run.signal}`);
    return undefined;
  }
  const out = join(ROOT, 'bench', 'results', 'server.json');
  return existsSync(out) ? JSON.parse(readFileSync(out, 'utf8')) : undefined;
}

async function main(): Promise<void> {
  const started = performance.now();
  const resultsDir = RESULTS;
  mkdirSync(resultsDir, { recursive: true });
  log('building dist/bench');
  build();
  const browser = await runBrowser();
  const browserFile = partialFile();
  writeFileSync(browserFile, `${JSON.stringify(browser, null, 2)}\n`);
  const chart = drainChartSvg(browser);
  const chartFile = join(resultsDir, quick ? 'drain-progress-quick.svg' : 'drain-progress.svg');
  if (chart !== undefined) writeFileSync(chartFile, chart);
  const server = only.has('server') ? runServerBench() : undefined;
  printTable(browser, server);
  log(`written to ${browserFile}${server ? ' and bench/results/server.json' : ''}`);
  if (chart !== undefined) log(`rows applied over time: ${chartFile}`);
  log(`done in ${Math.round((performance.now() - started) / 1000)} s`);
  if (browser.failed?.length) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
