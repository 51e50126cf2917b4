// Builds the demo into dist/demo/ when its sources changed since the last build. Used by
// `npm start` and the demo's end-to-end tests; several processes may call it at once (two
// Playwright workers), so the build runs under a lock directory and the second caller finds the
// build fresh.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const OUT = 'dist/demo';
const STAMP = join(OUT, 'build.json');
const LOCK = join('.tmp', 'demo-build.lock');
/** Everything the bundles are made of. */
const SOURCES = ['demo', 'client', 'sw', 'shared', 'package-lock.json'];
const STALE_LOCK_MS = 5 * 60 * 1000;

function newestChange(path) {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return Math.max(info.mtimeMs, ...readdirSync(path).map((name) => newestChange(join(path, name))));
}

function isFresh() {
  return existsSync(STAMP) && statSync(STAMP).mtimeMs >= Math.max(...SOURCES.map(newestChange));
}

async function withLock(work) {
  mkdirSync('.tmp', { recursive: true });
  for (let waited = 0; ; waited += 200) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      // A build that crashed leaves its lock behind; nothing takes this long.
      if (Date.now() - statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs > STALE_LOCK_MS) {
        rmSync(LOCK, { recursive: true, force: true });
      }
      if (waited > STALE_LOCK_MS) throw new Error(`${LOCK} is held; remove it if no build runs`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** Builds the demo unless it is up to date; `force` builds anyway. Throws when the build fails. */
export async function buildDemo({ force = false, quiet = false } = {}) {
  await withLock(() => {
    if (!force && isFresh()) return;
    const rollup = createRequire(import.meta.url).resolve('rollup/dist/bin/rollup');
    const result = spawnSync(
      process.execPath,
      [rollup, '-c', 'demo/rollup.config.mjs', ...(quiet ? ['--silent'] : [])],
      // Build logs go to stderr: stdout carries only the `listening on` line tools wait for.
      { stdio: ['ignore', quiet ? 'ignore' : 2, 2] },
    );
    if (result.status !== 0) throw new Error('the demo build failed (see the output above)');
    writeFileSync(STAMP, JSON.stringify({ builtAt: new Date().toISOString() }));
  });
}
