import { classify } from './findings.ts';
import type { Violation } from './oracles.ts';
import { runSim, type SimResult } from './run.ts';
import { generateScript, type Narrowing, type SimConfig } from './swarm-config.ts';

/**
 * Shrinks a failing run (SPEC §20): the same seed with fewer faults, actors, holders, owners and
 * ops, as long as the same oracle still fails the same way. Ops go by delta debugging over the
 * script. The result replays byte for byte from its seed and narrowing.
 */

/** What makes two failures the same: the guarantee, the rule that broke and the finding it shows. */
export function failureKind(v: Violation): string {
  return `${v.guarantee} ${v.check} ${classify(v).id}`;
}

export interface ShrinkOptions {
  /** Runs the shrinker may spend. */
  budget?: number;
  /** Runs a candidate; the default runs the simulation of this module. */
  run?: (config: SimConfig, narrowing: Narrowing) => Promise<SimResult>;
}

export async function shrink(failing: SimResult, options: ShrinkOptions = {}): Promise<SimResult> {
  const run = options.run ?? runSim;
  const kind = failureKind(failing.violation!);
  let budget = options.budget ?? 250;
  // Fewer ops may interleave into a longer story: what is returned is the shortest trace found.
  let best = failing;
  let narrowing: Narrowing = { ...failing.narrowing };
  const config = failing.config;

  const attempt = async (candidate: Narrowing): Promise<boolean> => {
    if (budget-- <= 0) return false;
    const result = await run(config, candidate);
    if (result.violation && failureKind(result.violation) === kind) {
      if (result.trace.length <= best.trace.length) best = result;
      narrowing = candidate;
      return true;
    }
    return false;
  };

  // Faults and actors, one at a time.
  for (const name of [...config.faults, ...config.actors]) {
    if ((narrowing.without ?? []).includes(name)) continue;
    await attempt({ ...narrowing, without: [...(narrowing.without ?? []), name] });
  }
  // Fewer holders and owners.
  for (let holders = 1; holders < config.holders; holders++)
    if (await attempt({ ...narrowing, holders })) break;
  if (config.owners > 1) await attempt({ ...narrowing, owners: 1 });

  // Delta debugging over the ops of the script.
  let ops = narrowing.keep ?? generateScript(config).map((_, i) => i);
  let chunks = 2;
  while (ops.length > 1 && budget > 0) {
    const size = Math.ceil(ops.length / chunks);
    let removed = false;
    for (let start = 0; start < ops.length; start += size) {
      const keep = [...ops.slice(0, start), ...ops.slice(start + size)];
      if (keep.length === 0) continue;
      if (await attempt({ ...narrowing, keep })) {
        ops = keep;
        chunks = Math.max(chunks - 1, 2);
        removed = true;
        break;
      }
    }
    if (!removed) {
      if (size <= 1) break;
      chunks = Math.min(ops.length, chunks * 2);
    }
  }
  return best;
}
