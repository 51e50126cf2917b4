import { resetMemoryStores } from '../../shared/store/memory.ts';
import { describeKey, KeyedMap } from './keys.ts';
import type { Guarantee, Violation } from './oracles.ts';
import { settle } from './scheduler.ts';
import {
  generateScript,
  type Narrowing,
  narrowed,
  narrowScript,
  type SimConfig,
} from './swarm-config.ts';
import { World as SimWorld, T0, type World } from './world.ts';

/**
 * One run of the simulation (SPEC §20): the seed's script interleaved with every pending port
 * step, an oracle check after each step, then the drain (faults off, leases expired, held rows
 * resumed, failed handlers retried, forced flushes until nothing moves) and the checks of a
 * quiet outbox. Everything that happens is a function of the seed and the narrowing.
 */

export interface SimResult {
  config: SimConfig;
  narrowing: Narrowing;
  violation?: Violation;
  trace: string[];
  steps: number;
  /** What the run reached: faults that struck, actors that acted, events, outcomes. */
  coverage: Map<string, number>;
  exercised: Record<Guarantee, number>;
}

/** Steps of the interleaving before the drain starts, whatever the script still holds. */
const MAX_STEPS = 12_000;
/** Steps the drain may take in all. */
const MAX_DRAIN_STEPS = 30_000;
const DRAIN_ROUNDS = 10;
/** The longest the network holds a ready request or answer back while time moves on. */
const MAX_STALL_MS = 60_000;
/** Blocked rows the app retries once the handler is fixed (their request replays). */
const RETRYABLE = new Set(['handler_failed', 'successor_unprepared']);

/**
 * Picks the next thing to happen: a ready step, the script's next op, or time moving on to the
 * next due step. Time passes over steps that are ready only where the seed switched on delays
 * (never over a due timer); otherwise once nothing is ready, as between bursts of work. While
 * the app waits (a tick) its next op waits too.
 */
async function stepOnce(world: World, nextOp?: () => Promise<void>): Promise<boolean> {
  const ready = world.sched.ready();
  const due = world.sched.nextDue();
  // A ready timer fires before time moves on: an event loop may be slow, never hours late. And
  // bytes on the wire are slow for seconds, not for the days a device sleeps: what is ready
  // lands before such a jump.
  const stalls =
    world.live &&
    world.on('delay') &&
    !ready.some((step) => step.timer) &&
    (due === undefined || due - world.sched.now <= MAX_STALL_MS);
  const weights = ready.map(() => 1);
  const opMayRun = nextOp !== undefined && world.sched.now >= world.waitUntil;
  weights.push(opMayRun ? Math.max(1, ready.length * 0.3) : 0);
  weights.push(due !== undefined && (stalls || ready.length === 0) ? (ready.length ? 0.2 : 1) : 0);
  if (weights.every((w) => w === 0)) return false;
  const choice = world.rng.weighted(weights);
  world.steps++;
  if (choice < ready.length) await world.sched.execute(ready[choice]!);
  else if (choice === ready.length) await nextOp!();
  else {
    world.sched.now = due!;
    world.sched.log('time moves on');
  }
  world.truth.afterStep(world.sched.now);
  world.checkCalls();
  return true;
}

/** Runs steps until nothing is pending (or the budget is spent). */
async function runUntilIdle(world: World, budget: { left: number }): Promise<void> {
  while (!world.truth.violation && budget.left-- > 0) {
    if (world.sched.size === 0 && world.calls.size === 0) return;
    if (!(await stepOnce(world))) return;
  }
}

/** Runs one API call to its end and returns its value (the drain's own questions). */
async function ask<T>(
  world: World,
  run: () => Promise<T>,
  budget: { left: number },
): Promise<T | undefined> {
  let done = false;
  let value: T | undefined;
  run().then(
    (v) => {
      done = true;
      value = v;
    },
    () => {
      done = true;
    },
  );
  await settle();
  while (!done && !world.truth.violation && budget.left-- > 0) {
    if (!(await stepOnce(world))) break;
  }
  return value;
}

function undrained(world: World): string[] {
  const left: string[] = [];
  for (const owner of world.owners)
    for (const row of world.ownRows(owner))
      if (!world.truth.mayRemain(row as unknown as Record<string, unknown>))
        left.push(
          `${row.id}:${row.state}${row.evidence?.lastErrorCode ? `/${row.evidence.lastErrorCode}` : ''}`,
        );
  return left;
}

/** Faults off, then rounds of expiry, resume, retry and forced flushes until the outbox is quiet. */
async function drain(world: World): Promise<void> {
  world.live = false;
  world.unauthorized = false;
  world.authNone.clear();
  world.signedOut.clear();
  world.sched.log('drain: faults off');
  for (let slot = 0; slot < world.config.holders; slot++)
    if (world.holders[slot] === undefined) await world.startHolder(slot);
  const budget = { left: MAX_DRAIN_STEPS };
  for (let round = 0; round < DRAIN_ROUNDS && !world.truth.violation; round++) {
    world.sched.log(`drain round ${round}`);
    // Leases run out; time gets there through every timer due on the way.
    world.wait(world.config.leaseMs * 2);
    await runUntilIdle(world, budget);
    for (const owner of world.owners) {
      const holder = world.rng.pick(world.liveHolders());
      const api = holder.api(owner);
      world.call(holder, 'resumeHeld', () => api.resumeHeld());
      // The app writes back what a conflict overwrote, once the network is good (§10.1).
      const entry = [...world.truth.ledger.values()].find((e) => e.owner === owner && !e.unsettled);
      if (round === 0 && entry !== undefined && world.actors.has('restore')) {
        world.count('actor:restore');
        world.call(holder, 'restore', () => api.restore(entry.successorId));
      }
      for (const row of world.ownRows(owner))
        if (row.state === 'blocked' && RETRYABLE.has(row.blockedCode ?? ''))
          world.call(holder, 'retry', () => api.retry(row.id));
    }
    await runUntilIdle(world, budget);
    for (const owner of world.owners) {
      const holder = world.rng.pick(world.liveHolders());
      world.call(holder, 'flush', () => holder.api(owner).flush({ force: true }));
    }
    await runUntilIdle(world, budget);
    if (world.calls.size === 0 && world.net.busy === 0 && undrained(world).length === 0) return;
  }
  if (world.truth.violation) return;
  for (const call of world.calls.values())
    world.truth.fail(
      'G7',
      'call-never-answered',
      `${call.holder.name} ${call.what} #${call.no} never answered`,
    );
  const left = undrained(world);
  // Faults off, the network up, nothing in flight, rounds of forced flushes: a row still
  // waiting, neither blocked nor held with its reason, would wait forever (G1).
  if (left.length > 0 && world.calls.size === 0 && world.net.busy === 0)
    world.truth.fail(
      'G1',
      'waits-forever',
      `rows wait with nothing in flight and the network up, after ${DRAIN_ROUNDS} rounds of forced flushes: ${left.join(', ')}`,
    );
  else if (left.length > 0)
    world.truth.fail(
      'G7',
      'never-drained',
      `rows still waiting after the drain: ${left.join(', ')}`,
    );
}

/** The checks of a quiet outbox, and what the page API shows of it. */
async function quiescence(world: World): Promise<void> {
  world.truth.quiescence({ record: (id) => world.server.records.get(id) });
  if (world.truth.violation) return;
  const budget = { left: 5_000 };
  for (const owner of world.owners) {
    const holder = world.liveHolders()[0]!;
    const api = holder.api(owner);
    const rows = await ask(world, () => api.rows(), budget);
    const stats = await ask(world, () => api.stats(), budget);
    if (rows === undefined || stats === undefined) {
      world.truth.fail(
        'G7',
        'call-never-answered',
        `rows()/stats() of ${owner} did not answer on a quiet outbox`,
      );
      return;
    }
    const stored = [...world.truth.rows.entries()].filter(
      ([, v]) => (v as { owner?: unknown }).owner === owner,
    );
    world.truth.exercise('G7');
    if (stats.total !== stored.length)
      world.truth.fail(
        'G7',
        'row-invisible',
        `${owner} has ${stored.length} rows stored but stats() counts ${stats.total}: ${stored.map(([id]) => describeKey(id)).join(', ')}`,
      );
    const shown = new Set(rows.map((view) => view.id));
    for (const [id, value] of stored) {
      const row = value as { blockedCode?: unknown };
      if (row.blockedCode === 'row_corrupt' && !shown.has(String(id)))
        world.truth.fail(
          'G7',
          'row-invisible',
          `the quarantined row ${describeKey(id)} of ${owner} is not in rows()`,
        );
    }
  }
  // The shadow the oracles kept must be what the store holds: a check of the simulation itself.
  const check = await world.openStore();
  try {
    for (const owner of world.owners) {
      const real = new KeyedMap<unknown>();
      for (const v of await check.scan(owner, { limit: 100_000 }))
        real.set((v as { id: unknown }).id, v);
      const shadow = [...world.truth.rows.entries()].filter(
        ([, v]) => (v as { owner?: unknown }).owner === owner,
      );
      if (
        real.size !== shadow.length ||
        shadow.some(([id, v]) => JSON.stringify(real.get(id)) !== JSON.stringify(v))
      )
        throw new Error(
          `simulation bug: the oracles' shadow of ${owner}'s rows differs from the store`,
        );
    }
  } finally {
    check.close();
  }
}

/** Runs a configuration (narrowed for replays and shrinking) and returns what happened. */
export async function runSim(config: SimConfig, narrowing: Narrowing = {}): Promise<SimResult> {
  const effective = narrowed(config, narrowing);
  const script = narrowScript(generateScript(config), effective, narrowing.keep);
  const world = new SimWorld(effective);
  world.sched.install();
  try {
    world.seedRecords();
    for (let slot = 0; slot < effective.holders; slot++) await world.startHolder(slot);
    let next = 0;
    const run = async () => {
      const [index, op] = script[next++]!;
      const note = await world.op(op);
      world.sched.log(`op ${index} ${op.op}: ${note}`);
      await settle();
    };
    while (!world.truth.violation && world.steps < MAX_STEPS) {
      if (!(await stepOnce(world, next < script.length ? run : undefined))) break;
    }
    if (!world.truth.violation) await drain(world);
    if (!world.truth.violation) await quiescence(world);
    if (world.truth.violation) {
      const v = world.truth.violation;
      world.sched.log(`VIOLATION ${v.guarantee} ${v.check}: ${v.detail}`);
    }
    const coverage = new Map(world.coverage);
    for (const [what, n] of world.truth.reached) coverage.set(`reached:${what}`, n);
    return {
      config,
      narrowing,
      ...(world.truth.violation ? { violation: world.truth.violation } : {}),
      trace: world.sched.trace,
      steps: world.steps,
      coverage,
      exercised: { ...world.truth.exercised },
    };
  } finally {
    world.sched.uninstall();
    world.close();
    if (config.store === 'memory') resetMemoryStores();
  }
}

export { T0 };
