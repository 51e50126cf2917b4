/** The simulation's entry points, as the CLI, the tests and a mutated copy load them (SPEC §20). */
export { runSim, type SimResult } from './run.ts';
export { failureKind, shrink } from './shrink.ts';
export { formatReport, runSwarm, type SwarmReport } from './swarm.ts';
export { swarmConfig } from './swarm-config.ts';
