import { Prng } from './prng.ts';

/**
 * The swarm of SPEC §20: each seed switches on a random subset of faults and actors, so rare
 * combinations are reached, and writes the app's script from the same seed.
 */

/** Faults a seed may switch on. Each is decided again at every point it could strike. */
export const FAULTS = [
  /** The request never reaches the server. */
  'lost-before',
  /** The server commits, the answer is lost. */
  'lost-after',
  /** Requests and answers travel slowly, some past the lease. */
  'delay',
  /** 500/502/503/504, 503 with Retry-After. */
  'http-5xx',
  /** 429 with Retry-After. */
  'http-429',
  /** The server answers 401 for a while. */
  'window-401',
  /** Another device edits records: 412 with the current value. */
  'other-device',
  /** The app makes edits the server rejects with 422. */
  'rejections',
  /** The server commits slowly: a second copy of the key meets 409 request-in-progress. */
  'in-progress',
  /** A store transaction fails. */
  'storage-fail',
  /** A store transaction commits, but its caller sees an error. */
  'storage-lost-ack',
  /** Quota errors on writes. */
  'quota',
  /** The app's handler throws (readReceipt, readConflict, prepareSuccessor, classify). */
  'handler-throws',
  /** The auth hook takes long. */
  'auth-slow',
  /** The auth hook fails. */
  'auth-fail',
  /** The app has no credentials for a while (rows held). */
  'auth-none',
  /** Holders' clocks differ. */
  'clock-skew',
  /** A holder's clock jumps. */
  'clock-step',
  /** Time jumps past leases. */
  'lease-expiry',
  /** Holders are killed at any await and restarted. */
  'kill',
  /**
   * The device sleeps for days (SPEC §15): every clock jumps ahead, and the server's ledger
   * forgets keys older than its retention. Drawn after everything else, so the seeds drawn
   * before it keep their configuration.
   */
  'sleep',
] as const;
export type Fault = (typeof FAULTS)[number];

/** Faults drawn after the others (each seed's earlier draws stay as they were). */
const LATE_FAULTS: ReadonlySet<Fault> = new Set(['sleep']);

/** The ledger retention of the simulated server (SPEC §15: at least 7 days). */
export const SIM_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Actors a seed may switch on (holders and owners are counts). */
export const ACTORS = [
  'creates',
  'updates',
  'deletes',
  'pending-edits',
  'retry',
  'discard',
  'resume-held',
  'restore',
  'legacy-v0',
  'corruptor',
  'cross-owner',
  /**
   * An owner signs out between attempts (SPEC §13) while another stays signed in, and signs in
   * again later: its rows wait held meanwhile, never sent with no credentials or another's.
   * Drawn after everything else, as the late faults are.
   */
  'sign-out',
  /**
   * The legacy v0 tab is busy: it flushes as the app makes an edit (an older bundle flushes on
   * every page event), so its sends race this bundle's claims of the same records (SPEC §6.1,
   * §17). Drawn after everything else; it adds no op to the script, so a seed's ops and their
   * numbers stay as they were.
   */
  'legacy-busy',
  /**
   * The page also writes through a Workbox route with `OutboxPlugin` in front of it (SPEC §20
   * "Reach", §22): its own records, `PUT` straight to the server, a row only when that fails.
   * Drawn after everything else on its own draws; it adds no op to the script.
   */
  'workbox-route',
  /**
   * The user types into one note: most updates go to the record the app edited last, as an
   * editor's autosave does, so edits of a record meet its rows in flight, merges and retries of
   * it (SPEC §6, §6.1). Drawn after everything else on its own draws; it adds no op to the script.
   */
  'typing',
] as const;
export type Actor = (typeof ACTORS)[number];

/** Actors drawn after every other draw. */
const LATE_ACTORS: ReadonlySet<Actor> = new Set([
  'sign-out',
  'legacy-busy',
  'workbox-route',
  'typing',
]);

export type StoreKind = 'memory' | 'idb';

/** Everything a run is made of: the seed decides it, a replay may narrow it. */
export interface SimConfig {
  seed: number;
  store: StoreKind;
  holders: number;
  owners: number;
  faults: Fault[];
  actors: Actor[];
  ops: number;
  leaseMs: number;
  batchSize: number;
  concurrency: number;
  conflict: 'rebase' | 'block';
  /** How often another device edits a record just before a request of this one arrives. */
  hot: number;
  /** Conflict successors of one record in one flush before `conflict_storm` (§10). */
  maxConflictSuccessors: number;
  /** The server takes batches (SPEC §15.1): holders send many rows per request. */
  batches: boolean;
  /**
   * Receipts each owner keeps (§2: bounded by count): a few, so a flush's prune removes ones a
   * later `retry`, enqueue repeat or `overtakenBy` mark still names.
   */
  maxReceipts: number;
  /**
   * Most rows in a batch (§15.1), and so in a page of the scan when `batchSize` is smaller too
   * (§7): a few, so a pass reads the queue in several pages and sends each before reading the
   * next, and more batches are on the wire together.
   */
  scanRows: number;
}

/**
 * What a replay narrows: faults and actors switched off, fewer holders or owners, ops kept; and
 * `scanRows` pinned, for a replay found before the swarm drew it (such a replay ran with 50).
 */
export interface Narrowing {
  without?: string[];
  holders?: number;
  owners?: number;
  keep?: number[];
  scanRows?: number;
}

/** The configuration a seed switches on. */
export function swarmConfig(seed: number, store: StoreKind): SimConfig {
  const rng = new Prng(seed, 1);
  const faults = FAULTS.filter((fault) => !LATE_FAULTS.has(fault) && rng.chance(0.4));
  const actors = ACTORS.filter(
    (actor) =>
      !LATE_ACTORS.has(actor) && rng.chance(actor === 'creates' || actor === 'updates' ? 0.9 : 0.5),
  );
  const config: SimConfig = {
    seed,
    store,
    holders: rng.int(1, 3),
    owners: rng.chance(0.4) ? 2 : 1,
    faults,
    actors,
    ops: rng.int(12, 40),
    leaseMs: 10_000,
    batchSize: rng.pick([2, 3, 50]),
    concurrency: rng.pick([1, 2, 4]),
    conflict: rng.chance(0.15) ? 'block' : 'rebase',
    hot: rng.pick([0.1, 0.3, 0.75, 0.95]),
    maxConflictSuccessors: rng.pick([3, 3, 12]),
    batches: rng.chance(0.4),
    // Drawn last: the draws before it, and so every replay's configuration, stay as they were.
    maxReceipts: rng.pick([500, 500, 2]),
    scanRows: 50,
  };
  // The late faults, drawn after every other draw.
  for (const fault of LATE_FAULTS) if (rng.chance(0.25)) faults.push(fault);
  for (const actor of LATE_ACTORS) if (rng.chance(0.3)) actors.push(actor);
  // After every draw above, so they stay as they were.
  config.scanRows = rng.pick([50, 50, 3]);
  return config;
}

/** A configuration with a narrowing applied. */
export function narrowed(config: SimConfig, narrowing: Narrowing): SimConfig {
  const without = new Set(narrowing.without ?? []);
  return {
    ...config,
    holders: Math.min(config.holders, narrowing.holders ?? config.holders),
    owners: Math.min(config.owners, narrowing.owners ?? config.owners),
    faults: config.faults.filter((f) => !without.has(f)),
    actors: config.actors.filter((a) => !without.has(a)),
    scanRows: narrowing.scanRows ?? config.scanRows,
  };
}

/** One thing the app, a device or the operator does, in script order. */
export type Op =
  | { op: 'create'; owner: number; holder: number; fields: Fields }
  | {
      op: 'update';
      owner: number;
      holder: number;
      slot: number;
      fields: Fields;
      base: Base;
      pending: boolean;
    }
  | { op: 'delete'; owner: number; holder: number; slot: number; base: Base; pending: boolean }
  | { op: 'flush'; owner: number; holder: number; force: boolean }
  | { op: 'retry'; owner: number; holder: number; pick: number }
  | { op: 'discard'; owner: number; holder: number; pick: number }
  | { op: 'resume-held'; owner: number; holder: number }
  | { op: 'restore'; owner: number; holder: number; pick: number }
  | { op: 'read'; owner: number; holder: number }
  | { op: 'kill'; holder: number }
  | { op: 'restart'; holder: number }
  | { op: 'corrupt'; owner: number; slot: number; numeric: boolean; flaw: number }
  | { op: 'other-device'; owner: number; slot: number }
  | { op: 'v0-enqueue'; owner: number; slot: number; fields: Fields; create: boolean }
  | { op: 'v0-flush'; owner: number }
  | { op: 'tick'; ms: number }
  | { op: 'sleep'; days: number }
  | { op: 'sign-out'; owner: number; on: boolean }
  | { op: 'clock-step'; holder: number; ms: number }
  | { op: 'window-401'; on: boolean }
  | { op: 'auth-none'; owner: number; on: boolean }
  | { op: 'cross-edit'; owner: number; holder: number; slot: number; fields: Fields };

export type Fields = Record<string, string>;
/** Which revision an edit is made from: none (no If-Match), the last known, or an older one. */
export type Base = 'none' | 'known' | 'stale';

/** Which actor or fault an op belongs to (so narrowing away one drops its ops). */
export function opOwner(op: Op): string | undefined {
  switch (op.op) {
    case 'create':
      return 'creates';
    case 'update':
      return op.pending ? 'pending-edits' : 'updates';
    case 'delete':
      return op.pending ? 'pending-edits' : 'deletes';
    case 'retry':
    case 'discard':
    case 'restore':
      return op.op;
    case 'resume-held':
      return 'resume-held';
    case 'corrupt':
      return 'corruptor';
    case 'v0-enqueue':
    case 'v0-flush':
      return 'legacy-v0';
    case 'cross-edit':
      return 'cross-owner';
    case 'kill':
    case 'restart':
      return 'kill';
    case 'other-device':
      return 'other-device';
    case 'clock-step':
      return 'clock-step';
    case 'window-401':
      return 'window-401';
    case 'auth-none':
      return 'auth-none';
    case 'tick':
      return op.ms >= 10_000 ? 'lease-expiry' : undefined;
    case 'sleep':
      return 'sleep';
    case 'sign-out':
      return 'sign-out';
    default:
      return undefined;
  }
}

/** The holder slot an op runs on, if any. */
function holderOf(op: Op): number | undefined {
  return 'holder' in op ? op.holder : undefined;
}

function fields(rng: Prng, n: number, rejections: boolean): Fields {
  const out: Fields = {};
  for (const field of ['title', 'body', 'tag']) if (rng.chance(0.5)) out[field] = `v${n}`;
  if (Object.keys(out).length === 0) out.title = `v${n}`;
  // An empty title is what the server rejects (422), as the demo's server does.
  if (rejections && rng.chance(0.25)) out.title = '';
  return out;
}

/** The app's script for a configuration: the same seed writes the same script. */
export function generateScript(config: SimConfig): Op[] {
  const rng = new Prng(config.seed, 2);
  const on = new Set<string>([...config.faults, ...config.actors]);
  const ops: Op[] = [];
  const owner = () => rng.int(0, config.owners - 1);
  const holder = () => rng.int(0, config.holders - 1);
  const base = (): Base => rng.pick(['none', 'known', 'known', 'stale'] as const);
  const rejections = on.has('rejections');
  const menu: Array<[number, () => Op | undefined]> = [
    [
      on.has('creates') ? 4 : 0,
      () => ({
        op: 'create',
        owner: owner(),
        holder: holder(),
        fields: fields(rng, ops.length, rejections),
      }),
    ],
    [
      on.has('updates') ? 6 : 0,
      () => ({
        op: 'update',
        owner: owner(),
        holder: holder(),
        slot: rng.int(0, 9),
        fields: fields(rng, ops.length, rejections),
        base: base(),
        pending: false,
      }),
    ],
    [
      on.has('pending-edits') ? 4 : 0,
      () => ({
        op: 'update',
        owner: owner(),
        holder: holder(),
        slot: rng.int(0, 9),
        fields: fields(rng, ops.length, rejections),
        base: 'none',
        pending: true,
      }),
    ],
    [
      on.has('deletes') ? 1.5 : 0,
      () => ({
        op: 'delete',
        owner: owner(),
        holder: holder(),
        slot: rng.int(0, 9),
        base: base(),
        pending: false,
      }),
    ],
    [
      on.has('pending-edits') ? 1 : 0,
      () => ({
        op: 'delete',
        owner: owner(),
        holder: holder(),
        slot: rng.int(0, 9),
        base: 'none',
        pending: true,
      }),
    ],
    [7, () => ({ op: 'flush', owner: owner(), holder: holder(), force: rng.chance(0.5) })],
    [
      on.has('retry') ? 2 : 0,
      () => ({ op: 'retry', owner: owner(), holder: holder(), pick: rng.int(0, 9) }),
    ],
    [
      on.has('discard') ? 1 : 0,
      () => ({ op: 'discard', owner: owner(), holder: holder(), pick: rng.int(0, 9) }),
    ],
    [
      on.has('resume-held') ? 1.5 : 0,
      () => ({ op: 'resume-held', owner: owner(), holder: holder() }),
    ],
    [
      on.has('restore') ? 6 : 0,
      () => ({ op: 'restore', owner: owner(), holder: holder(), pick: rng.int(0, 9) }),
    ],
    [1, () => ({ op: 'read', owner: owner(), holder: holder() })],
    [on.has('kill') ? 1.5 : 0, () => ({ op: 'kill', holder: holder() })],
    [on.has('kill') ? 1.5 : 0, () => ({ op: 'restart', holder: holder() })],
    [
      on.has('corruptor') ? 1 : 0,
      () => ({
        op: 'corrupt',
        owner: owner(),
        slot: rng.int(0, 9),
        numeric: rng.chance(0.4),
        flaw: rng.int(0, 6),
      }),
    ],
    [
      on.has('other-device') ? 2.5 : 0,
      () => ({ op: 'other-device', owner: owner(), slot: rng.int(0, 9) }),
    ],
    [
      on.has('legacy-v0') ? 1.5 : 0,
      () => ({
        op: 'v0-enqueue',
        owner: owner(),
        slot: rng.int(0, 9),
        fields: fields(rng, ops.length, false),
        create: rng.chance(0.3),
      }),
    ],
    [on.has('legacy-v0') ? 1.5 : 0, () => ({ op: 'v0-flush', owner: owner() })],
    [2, () => ({ op: 'tick', ms: rng.pick([200, 1_000, 3_000]) })],
    [
      on.has('lease-expiry') ? 1.5 : 0,
      () => ({ op: 'tick', ms: config.leaseMs + rng.int(1, 5_000) }),
    ],
    [
      on.has('clock-step') ? 1 : 0,
      () => ({ op: 'clock-step', holder: holder(), ms: rng.int(-800, 800) }),
    ],
    [on.has('window-401') ? 1 : 0, () => ({ op: 'window-401', on: rng.chance(0.5) })],
    [on.has('auth-none') ? 1 : 0, () => ({ op: 'auth-none', owner: owner(), on: rng.chance(0.5) })],
    [
      on.has('cross-owner') && config.owners > 1 ? 1.5 : 0,
      () => ({
        op: 'cross-edit',
        owner: owner(),
        holder: holder(),
        slot: rng.int(0, 9),
        fields: fields(rng, ops.length, false),
      }),
    ],
  ];
  // Last, and weighed 0 when off: the scripts of seeds without it stay as they were.
  menu.push([on.has('sleep') ? 0.7 : 0, () => ({ op: 'sleep', days: rng.pick([2, 8, 8, 30]) })]);
  menu.push([
    on.has('sign-out') ? 1.5 : 0,
    () => ({ op: 'sign-out', owner: owner(), on: rng.chance(0.5) }),
  ]);
  const weights = menu.map(([w]) => w);
  while (ops.length < config.ops) {
    const made = menu[rng.weighted(weights)]![1]();
    if (made) ops.push(made);
  }
  return ops;
}

/** The script a narrowed configuration runs: ops of switched-off actors, faults or slots dropped. */
export function narrowScript(
  script: Op[],
  config: SimConfig,
  keep?: number[],
): Array<[number, Op]> {
  const on = new Set<string>([...config.faults, ...config.actors]);
  const kept = keep ? new Set(keep) : undefined;
  const out: Array<[number, Op]> = [];
  script.forEach((op, index) => {
    if (kept && !kept.has(index)) return;
    const owner = opOwner(op);
    if (owner !== undefined && !on.has(owner)) return;
    const slot = holderOf(op);
    if (slot !== undefined && slot >= config.holders) return;
    if ('owner' in op && op.owner >= config.owners) return;
    out.push([index, op]);
  });
  return out;
}
