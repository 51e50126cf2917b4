#!/usr/bin/env node
// `npm test`: type-check, lint, unit tests, build, package checks, end-to-end tests — in that
// order — then one plain summary line. It makes sure Debian's Chromium is there (installing it when running as
// root) and points the PostgreSQL suites at a local server when one runs or can be started.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CHROMIUM = '/usr/bin/chromium';
const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const reports = mkdtempSync(join(tmpdir(), 'sw-outbox-test-'));
const bin = (name) => join('node_modules', '.bin', name);
const say = (line) => console.log(`\n▶ ${line}`);

function ensureChromium() {
  if (existsSync(CHROMIUM)) return true;
  if (process.getuid?.() === 0) {
    say('Chromium is missing: installing Debian’s chromium package');
    const ok =
      spawnSync('apt-get', ['update'], { stdio: 'inherit' }).status === 0 &&
      spawnSync('apt-get', ['install', '-y', 'chromium'], { stdio: 'inherit' }).status === 0;
    if (ok && existsSync(CHROMIUM)) return true;
  }
  console.error(
    `\nThe end-to-end tests need Chromium at ${CHROMIUM}. Install it with:\n` +
      '  sudo apt-get update && sudo apt-get install -y chromium\n' +
      '(Playwright never downloads a browser here; playwright.config.ts points at that path.)',
  );
  return false;
}

function portOpen(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    for (const event of ['error', 'timeout']) {
      socket.once(event, () => {
        socket.destroy();
        resolve(false);
      });
    }
  });
}

async function ensurePostgres() {
  if (process.env.DATABASE_URL) return;
  if (!(await portOpen(5432)) && existsSync('/etc/postgresql')) {
    for (const version of readdirSync('/etc/postgresql')) {
      spawnSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], {
        stdio: 'inherit',
      });
    }
    for (let i = 0; i < 20 && !(await portOpen(5432)); i++)
      await new Promise((r) => setTimeout(r, 250));
  }
  if (await portOpen(5432)) {
    process.env.DATABASE_URL = PG_URL;
    console.log(`PostgreSQL: using ${PG_URL}`);
  } else {
    console.log(
      'PostgreSQL: nothing listens on 127.0.0.1:5432 and none could be started — the PostgreSQL suites are skipped.',
    );
  }
}

/** Runs one step; returns whether it passed. */
function step(name, command, args, env = {}) {
  say(name);
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status === 0;
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

const counts = { passed: 0, failed: 0, skipped: 0 };
const failedSteps = [];
/** Failures no test count shows (tsc, lint, build, a runner that crashed): one each. */
let uncounted = 0;
const record = (name, ok, failedTests = 0) => {
  if (ok) return;
  failedSteps.push(name);
  if (failedTests === 0) uncounted++;
};

await ensurePostgres();
const chromium = ensureChromium();

record('tsc', step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit']));
record('lint', step('lint (biome lint)', bin('biome'), ['lint', '.']));

const vitestJson = join(reports, 'vitest.json');
const vitestOk = step('unit tests (vitest run)', bin('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile=${vitestJson}`,
]);
const vitest = readJson(vitestJson) ?? {};
counts.passed += vitest.numPassedTests ?? 0;
counts.failed += vitest.numFailedTests ?? 0;
counts.skipped += (vitest.numPendingTests ?? 0) + (vitest.numTodoTests ?? 0);
record('vitest', vitestOk, vitest.numFailedTests ?? 0);

const built = step('build (npm run build)', 'npm', ['run', 'build']);
record('build', built);

// The published declarations, as an app's compiler meets them: a page (DOM), a worker (WebWorker
// only) and a Node server, each importing the package by name through its `exports`.
if (built) {
  for (const target of ['page', 'sw', 'server']) {
    const config = `tests/package/tsconfig.${target}.json`;
    record(
      `package types (${target})`,
      step(`package types: ${target} (tsc -p ${config})`, bin('tsc'), ['-p', config]),
    );
  }
}

// What ships (SPEC §22): the tarballs, an install as an app makes it, publint, arethetypeswrong
// and the size budgets, all from the finished build.
if (built) {
  const packageJson = join(reports, 'package.json');
  const packageOk = step('packages (pack, install, publint, attw, size budgets)', bin('vitest'), [
    'run',
    '--config',
    'vitest.package.config.ts',
    '--reporter=default',
    '--reporter=json',
    `--outputFile=${packageJson}`,
  ]);
  const results = readJson(packageJson) ?? {};
  counts.passed += results.numPassedTests ?? 0;
  counts.failed += results.numFailedTests ?? 0;
  counts.skipped += (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
  record('packages', packageOk, results.numFailedTests ?? 0);
}

// examples/vite-pwa as a user builds it: from the packed tarballs into .tmp/examples/vite-pwa
// (its node_modules kept between runs), type-checked and built with Vite; its end-to-end test
// (e2e/example/) runs with the others.
if (built) {
  say('example: examples/vite-pwa from the packed tarballs (scripts/example.mjs)');
  record('example', spawnSync('node', ['scripts/example.mjs'], { stdio: 'inherit' }).status === 0);
}

if (!chromium) {
  record('e2e (no Chromium)', false);
} else if (!built) {
  say('end-to-end tests skipped: the build failed');
  record('e2e (build failed)', false);
} else {
  const playwrightJson = join(reports, 'playwright.json');
  const e2eOk = step(
    'end-to-end tests (playwright test)',
    bin('playwright'),
    ['test', '--reporter=list,json'],
    {
      SW_OUTBOX_E2E_BUILT: '1',
      PLAYWRIGHT_JSON_OUTPUT_NAME: playwrightJson,
    },
  );
  const stats = readJson(playwrightJson)?.stats ?? {};
  counts.passed += (stats.expected ?? 0) + (stats.flaky ?? 0);
  counts.failed += stats.unexpected ?? 0;
  counts.skipped += stats.skipped ?? 0;
  record('e2e', e2eOk, stats.unexpected ?? 0);
}

rmSync(reports, { recursive: true, force: true });
console.log(
  failedSteps.length ? `\nfailed steps: ${failedSteps.join(', ')}` : '\nevery step passed',
);
console.log(
  `test: ${counts.passed} passed, ${counts.failed + uncounted} failed, ${counts.skipped} skipped`,
);
process.exit(failedSteps.length === 0 ? 0 : 1);
