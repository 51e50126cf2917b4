/**
 * Load script for the reference server (SPEC §19, issue 3): writes/s and p99 per adapter with 50
 * concurrent keep-alive connections, plus a duplicate storm (many concurrent copies of one key →
 * exactly one effect). Then the same creates in batches (SPEC §15.1, issue 16): items/s and the
 * p99 of whole batches for each batch size, and a storm of concurrent copies of one batch.
 * Loopback only, bounded in count and time.
 *
 * Then the server kit's cost (SPEC §19, §22.1): one create route on `node:http`
 * (bench/kit-process.ts) with and without the kit's ledger, on SQLite (FULL) and PostgreSQL, and
 * on PostgreSQL the contract's floor (the ledger's statements by hand, bench/kit-floor.ts), the
 * variants alternating round by round in one run: writes/s, p99 and server CPU per write, the
 * kit's multiple of the bare write (target ≤ 1.3×), of the floor, and the floor's of the bare.
 *
 *   npx tsx bench/server.ts [--rounds 3] [--writes 60000] [--seconds 6] [--connections 50]
 *                           [--storm 200] [--batch-sizes 10,50] [--batch-storm 30]
 *                           [--kit-rounds 3] [--kit-writes 4000] [--kit-stores sqlite-full,postgres]
 *                           [--kit-baseline <checkout>]
 *                           [--kit-node-args='--cpu-prof --cpu-prof-dir=<dir>']
 *
 * `--kit-baseline` runs the kit of another checkout (an earlier commit, with its node_modules)
 * as a fourth variant, `base`, so a change to the kit is measured before and after in one run.
 *                           [--only sqlite-normal|sqlite-full|postgres|kit]
 *
 * Every round starts a fresh server process and a fresh database. The machine is shared, so each
 * adapter runs several rounds and both the best and the median are reported. Results go to
 * bench/results/server.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  type KitCost,
  type KitMode,
  type KitStore,
  type KitVariant,
  kitCostLines,
  kitModes,
  kitRoundOrder,
  summarizeKitCost,
} from './kit-cost.ts';
import {
  type BatchLoadResult,
  batchRequest,
  createRequest,
  httpRequest,
  type LoadResult,
  newKey,
  RawConnection,
  runBatches,
  runCreates,
} from './server-load.ts';
import {
  dropSchema,
  postgresCpuMs,
  postgresReachable,
  processCpuMs,
  ROOT,
  redact,
  startScriptProcess,
  startServerProcess,
} from './server-process.ts';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    writes: { type: 'string', default: '60000' },
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    storm: { type: 'string', default: '200' },
    only: { type: 'string' },
    'pg-pool': { type: 'string', default: '16' },
    'batch-sizes': { type: 'string', default: '10,50' },
    'batch-storm': { type: 'string', default: '30' },
    'kit-rounds': { type: 'string', default: '3' },
    'kit-writes': { type: 'string', default: '4000' },
    'kit-stores': { type: 'string', default: 'sqlite-full,postgres' },
    /** A checkout of an earlier commit whose kit runs beside this one (variant `base`). */
    'kit-baseline': { type: 'string' },
    /** Node flags of the kit's process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
    'kit-node-args': { type: 'string', default: '' },
  },
});
const ROUNDS = Number(values.rounds);
const WRITES = Number(values.writes);
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const STORM = Number(values.storm);
const BATCH_SIZES = values['batch-sizes']
  .split(',')
  .filter((size) => size !== '')
  .map(Number);
const BATCH_STORM = Number(values['batch-storm']);
const KIT_ROUNDS = Number(values['kit-rounds']);
const KIT_WRITES = Number(values['kit-writes']);
const KIT_STORES = values['kit-stores']
  .split(',')
  .filter((store): store is KitStore => store === 'sqlite-full' || store === 'postgres');
const KIT_BASELINE = values['kit-baseline'] && resolve(values['kit-baseline']);
const KIT_NODE_ARGS = values['kit-node-args'].split(' ').filter((arg) => arg !== '');

interface Target {
  name: string;
  target: number;
  /** CLI arguments for round `n`, each round on a fresh database. */
  args(round: number): string[];
  cleanup(round: number): Promise<void>;
}

interface Round extends LoadResult {
  /** CPU per write: steadier than writes/s when the machine is shared. */
  serverCpuUsPerWrite: number;
  /** The same creates in batches, one entry per batch size. */
  batched: BatchRound[];
  serverCpuPercent: number;
  /** 1-minute load average when the round ended: other work on the machine. */
  loadAverage: number;
  /** CPU of all local `postgres` processes during the run (≈0 for SQLite). */
  databaseCpuPercent: number;
  loadCpuPercent: number;
}

interface BatchRound extends BatchLoadResult {
  serverCpuUsPerItem: number;
  serverCpuPercent: number;
  databaseCpuPercent: number;
}

/** Batched items/s of one batch size over the rounds. */
interface BatchSummary {
  batchSize: number;
  bestItemsPerSecond: number;
  medianItemsPerSecond: number;
  /** p99 of a whole batch in the median round. */
  p99Ms: number;
  serverCpuUsPerItem: number;
}

interface BatchStormResult {
  copies: number;
  items: number;
  /** Notes afterwards: one per item means one effect per key. */
  effects: number;
  itemStatuses: Record<string, number>;
  errors: number;
}

interface StormResult {
  copies: number;
  effects: number;
  statuses: Record<string, number>;
  replayed: number;
  errors: number;
}

interface AdapterResult {
  adapter: string;
  target: number;
  bestWritesPerSecond: number;
  medianWritesPerSecond: number;
  /** p99 of the median round. */
  p99Ms: number;
  rounds: Round[];
  storm: StormResult;
  batched: BatchSummary[];
  batchStorm: BatchStormResult | undefined;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-bench-'));
  const removeDb = (file: string) => {
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  };
  const sqlite = (name: string, sync: string, target: number): Target => ({
    name,
    target,
    args: (round) => ['--db', join(dir, `${name}-${round}.db`), '--sync', sync],
    cleanup: async (round) => removeDb(join(dir, `${name}-${round}.db`)),
  });
  const targets = [sqlite('sqlite-normal', 'normal', 12_000), sqlite('sqlite-full', 'full', 3_200)];
  if (await postgresReachable(DATABASE_URL)) {
    const schema = (round: number) => `bench_${process.pid}_${round}`;
    targets.push({
      name: 'postgres',
      target: 2_500,
      args: (round) => [
        '--db',
        DATABASE_URL,
        '--pg-schema',
        schema(round),
        '--pool-size',
        values['pg-pool'],
      ],
      cleanup: (round) => dropSchema(DATABASE_URL, schema(round)),
    });
  } else {
    console.log(
      `PostgreSQL at ${redact(DATABASE_URL)} is not reachable: the postgres adapter is skipped`,
    );
  }

  const results: AdapterResult[] = [];
  let kitCost: KitCost[] = [];
  try {
    for (const target of targets) {
      if (values.only && values.only !== target.name) continue;
      results.push(await measureAdapter(target));
    }
    if (!values.only || values.only === 'kit') {
      const withPostgres = targets.some((target) => target.name === 'postgres');
      kitCost = await measureKitCost(dir, withPostgres);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  console.log('\nadapter        best w/s  median w/s   target   p99 ms   storm (copies → effects)');
  for (const r of results) {
    const cells = [
      r.adapter.padEnd(14),
      String(r.bestWritesPerSecond).padStart(8),
      String(r.medianWritesPerSecond).padStart(11),
      String(r.target).padStart(8),
      r.p99Ms.toFixed(2).padStart(8),
    ];
    console.log(`${cells.join(' ')}   ${r.storm.copies} → ${r.storm.effects}`);
  }
  if (BATCH_SIZES.length > 0) {
    console.log(
      '\nbatched        size  best items/s  median items/s   ×single   p99 ms/batch   µs cpu/item   batch storm',
    );
    for (const r of results) {
      for (const b of r.batched) {
        const cells = [
          r.adapter.padEnd(14),
          String(b.batchSize).padStart(4),
          String(b.bestItemsPerSecond).padStart(13),
          String(b.medianItemsPerSecond).padStart(15),
          `${(b.medianItemsPerSecond / r.medianWritesPerSecond).toFixed(1)}×`.padStart(9),
          b.p99Ms.toFixed(2).padStart(14),
          String(b.serverCpuUsPerItem).padStart(13),
        ];
        const storm = r.batchStorm;
        const stormCell = storm ? `${storm.copies} × ${storm.items} → ${storm.effects}` : '—';
        console.log(`${cells.join(' ')}   ${stormCell}`);
      }
    }
  }
  if (kitCost.length > 0) console.log(`\n${kitCostLines(kitCost).join('\n')}`);
  const out = join(ROOT, 'bench', 'results', 'server.json');
  mkdirSync(dirname(out), { recursive: true });
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    connections: CONNECTIONS,
    results,
    kitCost,
  };
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwritten to ${out}`);
}

async function measureAdapter(target: Target): Promise<AdapterResult> {
  const rounds: Round[] = [];
  let storm: StormResult | undefined;
  let batchStorm: BatchStormResult | undefined;
  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServerProcess(target.args(round));
    try {
      rounds.push(await measureRound(server.url, server.child.pid!));
      if (round === ROUNDS) {
        storm = await duplicateStorm(server.url);
        if (BATCH_SIZES.length > 0) batchStorm = await batchDuplicateStorm(server.url);
      }
    } finally {
      await server.stop();
      await target.cleanup(round);
    }
    const last = rounds.at(-1)!;
    console.log(
      `${target.name} round ${round}: ${last.writesPerSecond} writes/s, p99 ${last.p99Ms} ms, server ${last.serverCpuUsPerWrite} µs cpu/write; cpu server ${last.serverCpuPercent}% db ${last.databaseCpuPercent}% load ${last.loadCpuPercent}% (load average ${last.loadAverage})`,
    );
    for (const b of last.batched) {
      console.log(
        `${target.name} round ${round}, batches of ${b.batchSize}: ${b.itemsPerSecond} items/s (${b.batches} batches), p99 ${b.p99Ms} ms per batch, server ${b.serverCpuUsPerItem} µs cpu/item; cpu server ${b.serverCpuPercent}% db ${b.databaseCpuPercent}%`,
      );
    }
  }
  const sorted = [...rounds].sort((a, b) => a.writesPerSecond - b.writesPerSecond);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    `${target.name}: duplicate storm ${storm!.copies} copies → ${storm!.effects} effect(s)`,
  );
  return {
    adapter: target.name,
    target: target.target,
    bestWritesPerSecond: sorted.at(-1)!.writesPerSecond,
    medianWritesPerSecond: median.writesPerSecond,
    p99Ms: median.p99Ms,
    rounds,
    storm: storm!,
    batched: BATCH_SIZES.map((size, index) =>
      summarizeBatches(
        size,
        rounds.map((r) => r.batched[index]!),
      ),
    ),
    batchStorm,
  };
}

function summarizeBatches(batchSize: number, rounds: BatchRound[]): BatchSummary {
  const sorted = [...rounds].sort((a, b) => a.itemsPerSecond - b.itemsPerSecond);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return {
    batchSize,
    bestItemsPerSecond: sorted.at(-1)!.itemsPerSecond,
    medianItemsPerSecond: median.itemsPerSecond,
    p99Ms: median.p99Ms,
    serverCpuUsPerItem: median.serverCpuUsPerItem,
  };
}

async function measureRound(url: string, pid: number): Promise<Round> {
  const token = await login(url, 'bench');
  await runCreates(url, token, { total: 3_000, connections: CONNECTIONS, maxSeconds: 5 });
  const server0 = processCpuMs(pid);
  const database0 = postgresCpuMs();
  const load0 = process.cpuUsage();
  const result = await runCreates(url, token, {
    total: WRITES,
    connections: CONNECTIONS,
    maxSeconds: SECONDS,
  });
  const wallMs = result.seconds * 1000;
  const load = process.cpuUsage(load0);
  const percent = (ms: number) => Math.round((ms / wallMs) * 100);
  const serverMs = processCpuMs(pid) - server0;
  const single = {
    ...result,
    serverCpuUsPerWrite: Math.round((serverMs * 1000) / Math.max(1, result.writes)),
    serverCpuPercent: percent(serverMs),
    loadAverage: Math.round(loadavg()[0]! * 10) / 10,
    databaseCpuPercent: percent(postgresCpuMs() - database0),
    loadCpuPercent: percent((load.user + load.system) / 1000),
  };
  const batched: BatchRound[] = [];
  for (const size of BATCH_SIZES) batched.push(await measureBatches(url, pid, token, size));
  return { ...single, batched };
}

/** The same creates in batches of `size` over the same connections, after a short warm-up. */
async function measureBatches(
  url: string,
  pid: number,
  token: string,
  size: number,
): Promise<BatchRound> {
  const options = { size, connections: CONNECTIONS, maxSeconds: SECONDS };
  await runBatches(url, token, { ...options, totalItems: 3_000, maxSeconds: 1.5 });
  const server0 = processCpuMs(pid);
  const database0 = postgresCpuMs();
  const result = await runBatches(url, token, { ...options, totalItems: WRITES * 4 });
  const wallMs = result.seconds * 1000;
  const serverMs = processCpuMs(pid) - server0;
  return {
    ...result,
    serverCpuUsPerItem: Math.round((serverMs * 1000) / Math.max(1, result.items)),
    serverCpuPercent: Math.round((serverMs / wallMs) * 100),
    databaseCpuPercent: Math.round(((postgresCpuMs() - database0) / wallMs) * 100),
  };
}

/**
 * Many concurrent copies of one batch of the largest size, each on its own connection: exactly
 * one note per item must exist afterwards; the other copies' items are replays or 409.
 */
async function batchDuplicateStorm(url: string): Promise<BatchStormResult> {
  const user = `batch-storm-${process.pid}-${Date.now().toString(36)}`;
  const token = await login(url, user);
  const items = Math.max(...BATCH_SIZES);
  const request = batchRequest(token, items, 'storm');
  const connections = await Promise.all(
    Array.from({ length: BATCH_STORM }, () => RawConnection.open(url)),
  );
  const itemStatuses: Record<string, number> = {};
  let errors = 0;
  await Promise.all(
    connections.map(async (connection) => {
      try {
        const answer = await connection.send(request);
        for (const item of (JSON.parse(answer.body) as { items: Array<{ status: number }> }).items)
          itemStatuses[item.status] = (itemStatuses[item.status] ?? 0) + 1;
      } catch {
        errors++;
      } finally {
        connection.close();
      }
    }),
  );
  const stats = JSON.parse((await httpRequest(url, 'GET', `/__stats?user=${user}`)).body) as {
    store: { notes: number };
  };
  return { copies: BATCH_STORM, items, effects: stats.store.notes, itemStatuses, errors };
}

/**
 * Many copies of one create with one key, each on its own connection and sent at once: exactly
 * one note must exist afterwards; the others are replays or 409 `request-in-progress`.
 */
async function duplicateStorm(url: string): Promise<StormResult> {
  const user = `storm-${process.pid}-${Date.now().toString(36)}`;
  const token = await login(url, user);
  const request = createRequest(token, newKey('storm'), 'one plate');
  const connections = await Promise.all(
    Array.from({ length: STORM }, () => RawConnection.open(url)),
  );
  const statuses: Record<string, number> = {};
  let replayed = 0;
  let errors = 0;
  await Promise.all(
    connections.map(async (connection) => {
      try {
        const answer = await connection.send(request);
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (answer.replayed) replayed++;
      } catch {
        errors++;
      } finally {
        connection.close();
      }
    }),
  );
  const stats = JSON.parse((await httpRequest(url, 'GET', `/__stats?user=${user}`)).body) as {
    store: { notes: number };
  };
  return { copies: STORM, effects: stats.store.notes, statuses, replayed, errors };
}

/**
 * The kit's cost (SPEC §19): the same create route bare, through the kit and (PostgreSQL) as the
 * contract's floor, each round on a fresh database and a fresh process, the variants alternating
 * and their order reversed every other round so that all meet the same machine. The medians of
 * the rounds are compared.
 */
async function measureKitCost(dir: string, withPostgres: boolean): Promise<KitCost[]> {
  const stores = KIT_STORES.filter((store) => store !== 'postgres' || withPostgres);
  const costs: KitCost[] = [];
  for (const store of stores) {
    const modes = kitModes(store, KIT_BASELINE !== undefined);
    const rounds = Object.fromEntries(modes.map((mode) => [mode, [] as KitVariant[]]));
    for (let round = 1; round <= KIT_ROUNDS; round++) {
      for (const mode of kitRoundOrder(modes, round)) {
        rounds[mode]!.push(await measureKitRound(dir, store, mode, round));
      }
    }
    costs.push(summarizeKitCost(store, rounds));
  }
  return costs;
}

/** One round of one variant: a fresh process and database, a warm-up, then the measured run. */
async function measureKitRound(
  dir: string,
  store: KitStore,
  mode: KitMode,
  round: number,
): Promise<KitVariant> {
  const name = `kit_${process.pid}_${mode}_${round}`;
  const env: Record<string, string> =
    store === 'postgres'
      ? { KIT_BENCH_STORE: 'postgres', KIT_BENCH_DB: DATABASE_URL, KIT_BENCH_SCHEMA: name }
      : { KIT_BENCH_STORE: 'sqlite', KIT_BENCH_DB: join(dir, `${name}.db`) };
  const server = await startScriptProcess(
    mode === 'base' ? join(KIT_BASELINE!, 'bench', 'kit-process.ts') : 'bench/kit-process.ts',
    [],
    { ...env, KIT_BENCH_MODE: mode === 'base' ? 'kit' : mode },
    { nodeArgs: KIT_NODE_ARGS, cwd: mode === 'base' ? KIT_BASELINE : ROOT },
  );
  try {
    const options = { connections: CONNECTIONS, maxSeconds: SECONDS };
    await runCreates(server.url, 'bench', { ...options, total: 500 });
    const cpu0 = processCpuMs(server.child.pid!);
    const result = await runCreates(server.url, 'bench', { ...options, total: KIT_WRITES });
    const cpuMs = processCpuMs(server.child.pid!) - cpu0;
    const variant = {
      writesPerSecond: result.writesPerSecond,
      p99Ms: result.p99Ms,
      serverCpuUsPerWrite: Math.round((cpuMs * 1000) / Math.max(1, result.writes)),
    };
    console.log(
      `kit cost, ${store}, ${mode}, round ${round}: ${variant.writesPerSecond} writes/s, p99 ${variant.p99Ms} ms, ${variant.serverCpuUsPerWrite} µs cpu/write (${result.writes} writes, statuses ${JSON.stringify(result.statuses)}, load average ${loadavg()[0]!.toFixed(1)})`,
    );
    return variant;
  } finally {
    await server.stop();
    if (store === 'postgres') await dropSchema(DATABASE_URL, name);
    else
      for (const suffix of ['', '-wal', '-shm'])
        rmSync(join(dir, `${name}.db${suffix}`), { force: true });
  }
}

async function login(url: string, user: string): Promise<string> {
  const body = JSON.stringify({ user });
  const answer = await httpRequest(
    url,
    'POST',
    '/auth/login',
    { 'content-type': 'application/json' },
    body,
  );
  return (JSON.parse(answer.body) as { token: string }).token;
}

await main();
