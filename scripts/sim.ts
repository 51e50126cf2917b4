// `npm run sim`: the deterministic simulation of SPEC §20 (docs/simulation.md).
//   npm run sim -- --seeds 100000 [--from 1] [--store memory|idb]   the soak, with the coverage table
//   npm run sim -- --seed 728 [--store idb] [--trace]               one seed; a failure is shrunk
//   npm run sim -- --replay '{"seed":728,"store":"memory","keep":[3,9]}' --trace
//   npm run sim -- --mutant retry-new-key --seeds 1000             a deliberately broken build
import { parseArgs } from 'node:util';
import { classify } from '../tests/sim/findings.ts';
import { loadMutant, MUTANTS, REVERTS, UNCAUGHT } from '../tests/sim/mutants.ts';
import {
  describeFailure,
  formatTrace,
  type Replay,
  replayCommand,
  replayOf,
} from '../tests/sim/report.ts';
import type { SimResult } from '../tests/sim/run.ts';
import type { Narrowing, SimConfig, StoreKind } from '../tests/sim/swarm-config.ts';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
    store: { type: 'string', default: 'memory' },
    trace: { type: 'boolean', default: false },
    replay: { type: 'string' },
    mutant: { type: 'string' },
    'no-shrink': { type: 'boolean', default: false },
    'stop-on-failure': { type: 'boolean', default: false },
  },
});

const store = values.store as StoreKind;
if (store !== 'memory' && store !== 'idb')
  throw new Error(`--store is memory or idb, not ${store}`);
const NAMES = [...Object.keys(MUTANTS), ...Object.keys(REVERTS), ...Object.keys(UNCAUGHT)];
if (values.mutant !== undefined && !NAMES.includes(values.mutant))
  throw new Error(`--mutant is one of ${NAMES.join(', ')}`);

const sim = await loadMutant(values.mutant);

async function one(config: SimConfig, narrowing: Narrowing): Promise<number> {
  const result = await sim.runSim(config, narrowing);
  if (values.trace) console.log(formatTrace(result));
  if (!result.violation) {
    console.log(
      `seed ${config.seed} (${config.store}): every oracle holds (${result.steps} steps)`,
    );
    return 0;
  }
  let shrunk: SimResult | undefined;
  if (!values['no-shrink'] && narrowing.keep === undefined) {
    shrunk = await sim.shrink(result);
    if (values.trace) console.log(`\nshrunk trace:\n${formatTrace(shrunk)}`);
  }
  console.log(describeFailure(result, shrunk));
  return 1;
}

if (values.replay !== undefined) {
  const replay = JSON.parse(values.replay) as Replay;
  process.exitCode = await one(sim.swarmConfig(replay.seed, replay.store), replay);
} else if (values.seed !== undefined) {
  process.exitCode = await one(sim.swarmConfig(Number(values.seed), store), {});
} else {
  const seeds = Number(values.seeds ?? 1000);
  const from = Number(values.from);
  const started = performance.now();
  const kinds = new Map<string, SimResult>();
  let done = 0;
  const report = await sim.runSwarm({
    from,
    seeds,
    store,
    stopOnFailure: values['stop-on-failure'],
    onResult: (result) => {
      done++;
      if (result.violation) {
        const finding = classify(result.violation);
        const key = `${finding.id} ${result.violation.guarantee} ${result.violation.check}`;
        // Every failing seed is named as it is found; the first of each kind is shrunk at the end.
        if (!kinds.has(key)) kinds.set(key, result);
        console.log(`seed ${result.config.seed}: ${key}`);
      }
      if (done % 1000 === 0) {
        const s = (performance.now() - started) / 1000;
        console.log(`… ${done} seeds, ${(done / s).toFixed(1)} seeds/s`);
      }
      return undefined;
    },
  });
  console.log(`\n${sim.formatReport(report)}`);
  if (report.failures.length > 0) {
    console.log('\nfailures, the first of each kind, shrunk:');
    for (const result of kinds.values()) {
      const shrunk = values['no-shrink'] ? undefined : await sim.shrink(result);
      console.log(describeFailure(result, shrunk));
      if (!shrunk) console.log(`  replay: ${replayCommand(replayOf(result))}`);
    }
    process.exitCode = 1;
  }
}
