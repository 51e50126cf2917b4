#!/usr/bin/env node
// `npm test`: type-check, lint, unit tests, build, package checks, the Vite example, end-to-end
// tests in Chromium, Firefox ESR and WebKitGTK — in that order — then a summary: one line per
// test suite and one plain total line.
// It makes sure Debian's browsers are there (installing them when running as root: a browser
// that cannot be had fails its suite, it is never skipped quietly) and points the PostgreSQL
// suites at a local server when one runs or can be started.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CHROMIUM = '/usr/bin/chromium';
const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
const WEBKIT = [
  process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver',
  process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser',
  process.env.XVFB_PATH ?? '/usr/bin/Xvfb',
];
const PG_URL = 'postgres://postgres@127.0.0.1:5432/test';
const reports = mkdtempSync(join(tmpdir(), 'sw-outbox-test-'));
const bin = (name) => join('node_modules', '.bin', name);
const say = (line) => console.log(`\n▶ ${line}`);

let aptUpdated = false;

/**
 * Makes sure a browser's files exist, installing Debian's packages when running as root. Returns
 * whether they are there now; says how to get them when not.
 */
function ensureBrowser(name, paths, packages) {
  if (paths.every((path) => existsSync(path))) return true;
  if (process.getuid?.() === 0) {
    say(
      `${name} is missing: installing Debian’s ${packages.filter((p) => !p.startsWith('-')).join(', ')}`,
    );
    aptUpdated ||= spawnSync('apt-get', ['update'], { stdio: 'inherit' }).status === 0;
    const installed =
      spawnSync('apt-get', ['install', '-y', ...packages], { stdio: 'inherit' }).status === 0;
    if (aptUpdated && installed && paths.every((path) => existsSync(path))) return true;
  }
  console.error(
    `\nThe ${name} end-to-end tests need ${paths.join(', ')}. Install with:\n` +
      `  sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}\n` +
      '(No browser is ever downloaded by the test tools here.)',
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

/** The simulation's fresh window as summary lines: where it came from and how to run it again. */
function simWindowFacts(window) {
  if (!window) return [];
  return [`simulation fresh window (${window.source}): ${window.commands.join(' ; ')}`];
}

const counts = { passed: 0, failed: 0, skipped: 0 };
/** One summary line per test suite: its counts and how long it took. */
const suites = [];
const failedSteps = [];
/** Failures no test count shows (tsc, lint, build, a runner that crashed): one each. */
let uncounted = 0;
const record = (name, ok, failedTests = 0) => {
  if (ok) return;
  failedSteps.push(name);
  if (failedTests === 0) uncounted++;
};

await ensurePostgres();
const chromium = ensureBrowser('Chromium', [CHROMIUM], ['chromium']);
const firefox = ensureBrowser('Firefox ESR', [FIREFOX], ['firefox-esr']);
const webkit = ensureBrowser('WebKitGTK', WEBKIT, [
  '--no-install-recommends',
  'webkit2gtk-driver',
  'xvfb',
  'libgl1-mesa-dri',
]);

record('tsc', step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit']));
record('lint', step('lint (biome lint)', bin('biome'), ['lint', '.']));

const vitestJson = join(reports, 'vitest.json');
// The simulation's fresh window (SPEC §20, tests/sim/window.ts) says where it started, for the
// summary: a failure there replays with the commands it printed.
const simWindow = join(reports, 'sim-window.json');
const started = performance.now();
const vitestOk = step(
  'unit tests (vitest run)',
  bin('vitest'),
  ['run', '--reporter=default', '--reporter=json', `--outputFile=${vitestJson}`],
  { SW_OUTBOX_SIM_REPORT: simWindow },
);
const vitest = readJson(vitestJson) ?? {};
counts.passed += vitest.numPassedTests ?? 0;
counts.failed += vitest.numFailedTests ?? 0;
counts.skipped += (vitest.numPendingTests ?? 0) + (vitest.numTodoTests ?? 0);
record('vitest', vitestOk, vitest.numFailedTests ?? 0);
suites.push({
  name: 'vitest',
  passed: vitest.numPassedTests ?? 0,
  failed: vitest.numFailedTests ?? (vitestOk ? 0 : 1),
  skipped: (vitest.numPendingTests ?? 0) + (vitest.numTodoTests ?? 0),
  ms: performance.now() - started,
  facts: simWindowFacts(readJson(simWindow)),
});

const built = step('build (npm run build)', 'npm', ['run', 'build']);
record('build', built);

// The published declarations, as an app's compiler meets them: a page (DOM), a worker (WebWorker
// only) and a Node server, each importing the package by name through its `exports`; and the
// server examples, which import `sw-outbox-server/kit` as their users do.
if (built) {
  for (const target of ['page', 'sw', 'server']) {
    const config = `tests/package/tsconfig.${target}.json`;
    record(
      `package types (${target})`,
      step(`package types: ${target} (tsc -p ${config})`, bin('tsc'), ['-p', config]),
    );
  }
  for (const example of ['express-postgres', 'hono-sqlite']) {
    const config = `examples/${example}/tsconfig.json`;
    record(
      `example types (${example})`,
      step(`example types: ${example} (tsc -p ${config})`, bin('tsc'), ['-p', config]),
    );
  }
}

// What ships (SPEC §22): the tarballs, an install as an app makes it, publint, arethetypeswrong
// and the size budgets, all from the finished build; and the server examples on the built server
// package (tests/examples/: `npm start` in each, sw-outbox-verify, the hostile requests).
if (built) {
  const packageJson = join(reports, 'package.json');
  const packageOk = step(
    'packages (pack, install, publint, attw, size budgets; server examples)',
    bin('vitest'),
    [
      'run',
      '--config',
      'vitest.package.config.ts',
      '--reporter=default',
      '--reporter=json',
      `--outputFile=${packageJson}`,
    ],
  );
  const results = readJson(packageJson) ?? {};
  counts.passed += results.numPassedTests ?? 0;
  counts.failed += results.numFailedTests ?? 0;
  counts.skipped += (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0);
  record('packages', packageOk, results.numFailedTests ?? 0);
  suites.push({
    name: 'packages',
    passed: results.numPassedTests ?? 0,
    failed: results.numFailedTests ?? (packageOk ? 0 : 1),
    skipped: (results.numPendingTests ?? 0) + (results.numTodoTests ?? 0),
    ms: 0,
    note: 'pack, install, publint, attw, size budgets, server examples',
  });
}

// examples/vite-pwa as a user builds it: from the packed library tarball into
// .tmp/examples/vite-pwa (its node_modules kept between runs), type-checked and built with Vite;
// its end-to-end test (e2e/example/) runs with the others, in `vite dev` and on the build,
// against examples/hono-sqlite's todo API.
if (built) {
  say('example: examples/vite-pwa from the packed tarball (scripts/example.mjs)');
  record('example', spawnSync('node', ['scripts/example.mjs'], { stdio: 'inherit' }).status === 0);
}

/** What the browser suites measured (their tests' annotations), as `type: description` lines. */
function measuredFacts(report) {
  const facts = [];
  const walk = (suite) => {
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        for (const result of t.results ?? []) {
          for (const a of result.annotations ?? []) {
            if (a.type !== 'skip' && a.description) facts.push(`${a.type}: ${a.description}`);
          }
        }
      }
    }
    for (const child of suite.suites ?? []) walk(child);
  };
  for (const suite of report?.suites ?? []) walk(suite);
  return facts;
}

/**
 * Runs one Playwright suite (its own config) and adds its counts. A browser that is missing or a
 * build that failed counts as a failed suite.
 */
function e2eSuite(name, label, config, available) {
  if (!available) {
    record(`${name} (browser missing)`, false);
    suites.push({ name, passed: 0, failed: 1, skipped: 0, ms: 0, note: 'browser missing' });
    return;
  }
  if (!built) {
    say(`${label} skipped: the build failed`);
    record(`${name} (build failed)`, false);
    suites.push({ name, passed: 0, failed: 1, skipped: 0, ms: 0, note: 'build failed' });
    return;
  }
  const json = join(reports, `${name}.json`);
  const began = performance.now();
  const ok = step(
    label,
    bin('playwright'),
    ['test', ...(config ? ['-c', config] : []), '--reporter=list,json'],
    { SW_OUTBOX_E2E_BUILT: '1', PLAYWRIGHT_JSON_OUTPUT_NAME: json },
  );
  const report = readJson(json);
  const stats = report?.stats ?? {};
  const passed = (stats.expected ?? 0) + (stats.flaky ?? 0);
  const failed = stats.unexpected ?? 0;
  const skipped = stats.skipped ?? 0;
  counts.passed += passed;
  counts.failed += failed;
  counts.skipped += skipped;
  record(name, ok, failed);
  suites.push({
    name,
    passed,
    failed: failed || (ok ? 0 : 1),
    skipped,
    ms: performance.now() - began,
    facts: measuredFacts(report),
  });
}

e2eSuite('chromium', 'end-to-end tests, Chromium (playwright test)', undefined, chromium);
e2eSuite(
  'firefox',
  'end-to-end tests, Firefox ESR (playwright test -c playwright.firefox.config.ts)',
  'playwright.firefox.config.ts',
  firefox,
);
e2eSuite(
  'webkit',
  'end-to-end tests, WebKitGTK (playwright test -c playwright.webkit.config.ts)',
  'playwright.webkit.config.ts',
  webkit,
);

rmSync(reports, { recursive: true, force: true });
console.log('');
for (const suite of suites) {
  const seconds = `${Math.round(suite.ms / 1000)} s`;
  console.log(
    `${suite.name}: ${suite.passed} passed, ${suite.failed} failed, ${suite.skipped} skipped` +
      (suite.note ? ` (${suite.note})` : ` (${seconds})`),
  );
  for (const fact of suite.facts ?? []) console.log(`  · ${fact}`);
}
console.log(
  failedSteps.length ? `\nfailed steps: ${failedSteps.join(', ')}` : '\nevery step passed',
);
console.log(
  `test: ${counts.passed} passed, ${counts.failed + uncounted} failed, ${counts.skipped} skipped`,
);
process.exit(failedSteps.length === 0 ? 0 : 1);
