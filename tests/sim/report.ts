import { classify } from './findings.ts';
import type { SimResult } from './run.ts';
import type { Narrowing, StoreKind } from './swarm-config.ts';

/** How a failure is named, replayed and shown (SPEC §20: the seed and a shrunk trace). */

/** Everything a replay needs: the seed, the store and what the shrinker narrowed. */
export interface Replay extends Narrowing {
  seed: number;
  store: StoreKind;
}

export function replayOf(result: SimResult): Replay {
  const n = result.narrowing;
  return {
    seed: result.config.seed,
    store: result.config.store,
    ...(n.without?.length ? { without: n.without } : {}),
    ...(n.holders !== undefined ? { holders: n.holders } : {}),
    ...(n.owners !== undefined ? { owners: n.owners } : {}),
    ...(n.keep ? { keep: n.keep } : {}),
    ...(n.scanRows !== undefined ? { scanRows: n.scanRows } : {}),
  };
}

export function replayCommand(replay: Replay): string {
  return `npm run sim -- --replay '${JSON.stringify(replay)}' --trace`;
}

/** A failure as the soak prints it: seed, oracle, a guess at the finding, how to replay. */
export function describeFailure(result: SimResult, shrunk?: SimResult): string {
  const v = result.violation!;
  const lines = [
    `seed ${result.config.seed} (${result.config.store}) breaks ${v.guarantee} ${v.check}: ${v.detail}`,
    `  looks like ${classify(v).id}: ${classify(v).title}`,
  ];
  if (shrunk) {
    const ops = shrunk.narrowing.keep?.length;
    lines.push(
      `  shrunk${ops === undefined ? '' : ` to ${ops} ops`}, ${shrunk.trace.length} trace lines; replay: ${replayCommand(replayOf(shrunk))}`,
    );
  }
  return lines.join('\n');
}

export function formatTrace(result: SimResult): string {
  return result.trace.map((line, i) => `${String(i).padStart(4)}  ${line}`).join('\n');
}
