#!/usr/bin/env node
// Prepares examples/vite-pwa as a user's app (SPEC §22): a copy in .tmp/examples/vite-pwa that
// installs sw-outbox from its packed tarball (never from source paths) and everything else from
// the npm registry, type-checks its page and worker, and builds it with `vite build`. The copy's
// node_modules is kept between runs, so a repeat install only swaps the tarball. `npm test` runs
// this before the example's end-to-end test (e2e/example/), which drives the app in `vite dev`
// and in the build (`vite preview`) against examples/hono-sqlite's todo API.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packAll } from './pack.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = join(ROOT, 'examples', 'vite-pwa');
export const EXAMPLE_DIR = join(ROOT, '.tmp', 'examples', 'vite-pwa');

function run(command, args, cwd) {
  const result = spawnSync(command, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  const output = `${result.stdout}${result.stderr}`;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed:\n${output}`);
  return output;
}

/** Copies, installs, checks and builds the example; returns where it is and what it printed. */
export function prepareExample({ log = () => {} } = {}) {
  const packs = packAll(join(ROOT, '.tmp', 'pack'));
  mkdirSync(EXAMPLE_DIR, { recursive: true });
  // The app's own files are the repository's; its node_modules and lock stay for the next run.
  for (const name of readdirSync(EXAMPLE_DIR)) {
    if (!['node_modules', 'package-lock.json'].includes(name)) {
      rmSync(join(EXAMPLE_DIR, name), { recursive: true, force: true });
    }
  }
  cpSync(SOURCE, EXAMPLE_DIR, {
    recursive: true,
    filter: (path) => !/[/\\](node_modules|dist|dev-dist)([/\\]|$)/.test(path),
  });
  const started = Date.now();
  const install = run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', packs.library],
    EXAMPLE_DIR,
  );
  log(`example: installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (/EBADENGINE/.test(install))
    throw new Error(`an engine warning while installing:\n${install}`);
  const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
  for (const config of ['tsconfig.json', 'tsconfig.sw.json']) run(tsc, ['-p', config], EXAMPLE_DIR);
  const build = run(join(EXAMPLE_DIR, 'node_modules', '.bin', 'vite'), ['build'], EXAMPLE_DIR);
  log(build.trim().split('\n').slice(-8).join('\n'));
  if (!existsSync(join(EXAMPLE_DIR, 'dist', 'sw.js'))) throw new Error('vite build wrote no sw.js');
  return {
    dir: EXAMPLE_DIR,
    dist: join(EXAMPLE_DIR, 'dist'),
    vite: join(EXAMPLE_DIR, 'node_modules', '.bin', 'vite'),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const example = prepareExample({ log: (line) => console.log(line) });
    console.log(`example: built ${example.dist}`);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
