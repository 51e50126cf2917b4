import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StoreKind } from './swarm-config.ts';

/**
 * The fresh window of SPEC §20 ("not tuned to its own seeds"): besides the fixed seeds, every
 * `npm test` runs seeds nobody chose, starting at a number derived from the commit under test.
 * A new commit moves the window, so no fix can be made against it; the same commit runs the same
 * window, so a failure there replays.
 *
 * Windows start in [1,000,000,000, 2,000,000,000): above every fixed range, regression and soak
 * reported so far, and below 2^32, which is all the seed a run reads (prng.ts).
 */

export const WINDOW_BASE = 1_000_000_000;
export const WINDOW_SPAN = 1_000_000_000;
export const WINDOW_SEEDS: Record<StoreKind, number> = { memory: 300, idb: 50 };
/** Names the start of the memory window explicitly (the idb window follows from it). */
export const WINDOW_ENV = 'SW_OUTBOX_SIM_WINDOW';

export interface SimWindow {
  /** First seed of each store's window. */
  from: Record<StoreKind, number>;
  seeds: Record<StoreKind, number>;
  /** Where the start came from: a commit, the environment, or the date when there is no commit. */
  source: string;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** HEAD's commit through git itself. */
function gitHead(root: string): string | undefined {
  const run = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' });
  const sha = run.status === 0 ? run.stdout.trim() : '';
  return /^[0-9a-f]{40,64}$/.test(sha) ? sha : undefined;
}

/** HEAD's commit read from the `.git` files, for a machine without the git program. */
export function readHead(root: string): string | undefined {
  try {
    let gitDir = join(root, '.git');
    if (!existsSync(gitDir)) return undefined;
    // A worktree or submodule: `.git` is a file naming the real directory.
    const pointer = /^gitdir: (.+)$/m.exec(safeRead(gitDir) ?? '');
    if (pointer) gitDir = isAbsolute(pointer[1]!) ? pointer[1]! : resolve(root, pointer[1]!);
    const head = safeRead(join(gitDir, 'HEAD'))?.trim();
    if (head === undefined) return undefined;
    if (/^[0-9a-f]{40,64}$/.test(head)) return head;
    const ref = /^ref: (.+)$/.exec(head)?.[1];
    if (ref === undefined) return undefined;
    // Refs live in the common directory of a worktree.
    const common = safeRead(join(gitDir, 'commondir'))?.trim();
    const dirs = [gitDir, ...(common ? [resolve(gitDir, common)] : [])];
    for (const dir of dirs) {
      const loose = safeRead(join(dir, ref))?.trim();
      if (loose && /^[0-9a-f]{40,64}$/.test(loose)) return loose;
      const packed = safeRead(join(dir, 'packed-refs'));
      const line = packed
        ?.split('\n')
        .find((l) => l.endsWith(` ${ref}`) && /^[0-9a-f]{40,64} /.test(l));
      if (line) return line.split(' ')[0];
    }
    return undefined;
  } catch {
    return undefined;
  }
}

function safeRead(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** Two window starts from a digest: one per store, each in the window range. */
function startsOf(hex: string): Record<StoreKind, number> {
  const at = (i: number) => WINDOW_BASE + (Number.parseInt(hex.slice(i, i + 8), 16) % WINDOW_SPAN);
  return { memory: at(0), idb: at(8) };
}

/**
 * The window of this run: `SW_OUTBOX_SIM_WINDOW` when set (a replay of a printed window), else
 * the commit (git, the `.git` files, or a CI's `GITHUB_SHA`), else today's date (UTC): a tree
 * without history still moves its window every day, and prints where it started.
 */
export function freshWindow(
  env: Record<string, string | undefined> = process.env,
  root = ROOT,
  today = new Date(),
): SimWindow {
  const seeds = { ...WINDOW_SEEDS };
  const explicit = env[WINDOW_ENV];
  if (explicit !== undefined && /^\d+$/.test(explicit)) {
    const memory = Number(explicit);
    const idb = startsOf(createHash('sha256').update(explicit).digest('hex')).idb;
    return { from: { memory, idb }, seeds, source: `${WINDOW_ENV}=${explicit}` };
  }
  const ci = env.GITHUB_SHA ?? env.CI_COMMIT_SHA;
  const sha =
    gitHead(root) ?? readHead(root) ?? (ci && /^[0-9a-f]{40,64}$/.test(ci) ? ci : undefined);
  if (sha !== undefined)
    return { from: startsOf(sha), seeds, source: `commit ${sha.slice(0, 12)}` };
  const day = today.toISOString().slice(0, 10);
  return {
    from: startsOf(createHash('sha256').update(day).digest('hex')),
    seeds,
    source: `no commit found: the date ${day} (UTC)`,
  };
}

/** The command that runs one store's window again. */
export function windowCommand(window: SimWindow, store: StoreKind): string {
  return `npm run sim -- --from ${window.from[store]} --seeds ${window.seeds[store]}${store === 'idb' ? ' --store idb' : ''}`;
}

/** The command that replays one seed of a window, with its trace and a shrunk failure. */
export function seedCommand(seed: number, store: StoreKind): string {
  return `npm run sim -- --seed ${seed}${store === 'idb' ? ' --store idb' : ''} --trace`;
}
