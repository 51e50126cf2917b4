import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  digestOf,
  dropSchema,
  newKey,
  newSchema,
  newUser,
  PG_SKIP_REASON,
  PG_URL,
} from '../server/helpers.ts';
import { HostileClient, sendHostile } from '../server/hostile-client.ts';

/**
 * The server examples as their users run them (SPEC §22.1): `npm start` in the example's folder,
 * importing `sw-outbox-server/kit` and its adapters by name — here the workspace's built server
 * package (`server/dist`, so this runs after `npm run build`), the same code its tarball ships,
 * without a per-example install that would compile better-sqlite3 again. Each is checked from
 * the outside by the package's `sw-outbox-verify` bin, and by the reference server's hostile
 * requests and batches: never a 5xx, never a stack, every error a typed problem.
 *
 * `FUZZ_EXAMPLE_RUNS` (default 200) hostile requests per example, a third as many batches;
 * `FUZZ_SEED` replays a run. Seeds that once found a fault run every time besides the random one.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const RUNS = Number(process.env.FUZZ_EXAMPLE_RUNS || 200);
const SEED = Number(process.env.FUZZ_SEED || Math.floor(Math.random() * 2 ** 31));
/** Seeds that found a fault: 98, a NUL in the Express example's own read route (a 500 from pg). */
const FOUND_SEEDS = [98];
const VERIFY_BIN = join(
  ROOT,
  'server',
  JSON.parse(readFileSync(join(ROOT, 'server', 'package.json'), 'utf8')).bin['sw-outbox-verify'],
);
const BUILT = existsSync(VERIFY_BIN) && existsSync(join(ROOT, 'server', 'dist', 'kit.js'));
if (!BUILT)
  console.warn('server examples skipped: run `npm run build` first (server/dist is missing)');
if (PG_SKIP_REASON) console.warn(`the Express + PostgreSQL example is skipped: ${PG_SKIP_REASON}`);

/** What every example is started with besides its own settings. */
const TEST_ENV = {
  PORT: '0',
  // The verifier's "a failed write leaves its key free" check creates a todo with this title.
  FAIL_TITLE: 'explode',
  // Stalled hostile requests are cut after a second (408), not after the default 30 s.
  REQUEST_TIMEOUT_MS: '1000',
};

/** An example's `npm start`, running. */
interface Example {
  url: string;
  port: number;
  output(): string;
  stop(): Promise<void>;
}

/** `npm start` in `examples/<name>`, waiting for `listening on http://127.0.0.1:<port>`. */
async function startExample(name: string, env: Record<string, string>): Promise<Example> {
  // Its own process group: npm, tsx and the app stop together.
  const child: ChildProcess = spawn('npm', ['start'], {
    cwd: join(ROOT, 'examples', name),
    env: { ...process.env, DATABASE_URL: '', ...TEST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}:\n${output}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    port: Number(new URL(url).port),
    output: () => output,
    async stop() {
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exited;
    },
  };
}

/** `sw-outbox-verify` against an example's todo API; its exit code and what it printed. */
async function verify(url: string): Promise<{ code: number; output: string }> {
  const args = [
    VERIFY_BIN,
    url,
    ...['--token', newUser('verify')],
    ...['--create', '/api/todos', '--create-body', '{"title":"verify"}'],
    ...['--update', '/api/todos/{id}', '--update-body', '{"done":true}'],
    ...['--count', '/api/todos', '--fail-body', '{"title":"explode"}'],
  ];
  try {
    const { stdout } = await promisify(execFile)(process.execPath, args);
    return { code: 0, output: stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, output: `${failed.stdout}${failed.stderr}` };
  }
}

/** The verifier passed every check, none skipped. */
function expectVerified({ code, output }: { code: number; output: string }): void {
  expect(code, output).toBe(0);
  expect(output).toContain('all checks passed');
  expect(output).not.toMatch(/^[-✗] /m);
  for (const guarantee of ['G2 at most one effect', 'G3', 'G4', 'G5']) {
    expect(output).toMatch(new RegExp(`^${guarantee}.*: pass$`, 'm'));
  }
}

/** The hostile requests and batches, judged as an app's answers: no 5xx, no stack, problems. */
async function expectNoHostileFault(name: string, example: Example): Promise<void> {
  const client = new HostileClient(name, example.port, '/api/todos');
  await client.arrange();
  for (const seed of [SEED, ...FOUND_SEEDS]) {
    const result = await sendHostile(client, { runs: RUNS, seed, judged: { kind: 'app' } });
    if (seed === SEED) console.log(`${name} fuzz (seed ${SEED}): ${result.statuses}`);
    expect(result.failures.slice(0, 10), `FUZZ_SEED=${seed}`).toEqual([]);
  }
}

/**
 * A version the history route cannot hold (beyond PostgreSQL's `integer`, SPEC §10.1's
 * `MAX_REVISION`, or not a whole number) is 404 `not-found` on either store, never a 500.
 */
async function expectNoSuchVersions(example: Example): Promise<void> {
  const statuses = [];
  for (const revision of ['2147483648', '9999999999', '9007199254740991', '1.5', 'x']) {
    const response = await fetch(`${example.url}/api/todos/todo-none/history/${revision}`, {
      headers: { authorization: `Bearer ${newUser()}` },
    });
    const body = await response.json();
    statuses.push(`${revision} ${response.status} ${body.type}`);
  }
  expect(statuses).toEqual([
    '2147483648 404 not-found',
    '9999999999 404 not-found',
    '9007199254740991 404 not-found',
    '1.5 404 not-found',
    'x 404 not-found',
  ]);
}

describe.skipIf(!BUILT)('examples/hono-sqlite (Hono 4, SQLite)', () => {
  let dir: string;
  let example: Example;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hono-sqlite-'));
    example = await startExample('hono-sqlite', { DB_PATH: join(dir, 'todos.db') });
  });
  afterAll(async () => {
    await example?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes sw-outbox-verify on every check, with G2, G3, G4 and G5 kept', async () => {
    expectVerified(await verify(example.url));
  });

  it('answers every hostile request and batch with no 5xx, no stack and a typed problem for every error', async () => {
    await expectNoHostileFault('hono-sqlite', example);
  });

  it('answers a history revision no todo can have 404, never a 500', async () => {
    await expectNoSuchVersions(example);
  });
});

describe.skipIf(!BUILT || PG_SKIP_REASON !== undefined)(
  'examples/express-postgres (Express 5, PostgreSQL), two processes on one ledger',
  () => {
    const schema = newSchema('example_express');
    let examples: Example[] = [];
    let pool: pg.Pool;
    beforeAll(async () => {
      const env = { DATABASE_URL: PG_URL, PG_SCHEMA: schema };
      examples = await Promise.all([
        startExample('express-postgres', env),
        startExample('express-postgres', env),
      ]);
      pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    });
    afterAll(async () => {
      await Promise.all(examples.map((example) => example.stop()));
      await pool?.end();
      await dropSchema(schema);
    });

    it('passes sw-outbox-verify on every check, on each process', async () => {
      for (const example of examples) expectVerified(await verify(example.url));
    });

    it('makes exactly one row of its own table from 50 concurrent copies of one key spread over both processes', async () => {
      const user = newUser();
      const key = newKey('todo');
      const body = JSON.stringify({ title: 'storm' });
      const answers = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const response = await fetch(`${examples[i % 2]!.url}/api/todos`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${user}`,
              'content-type': 'application/json',
              'idempotency-key': `"${key}"`,
              'content-digest': digestOf(body),
            },
            body,
          });
          return { status: response.status, text: await response.text() };
        }),
      );
      for (const answer of answers) expect([201, 409]).toContain(answer.status);
      const created = answers.filter((answer) => answer.status === 201);
      expect(new Set(created.map((answer) => answer.text)).size).toBe(1);
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".todos WHERE owner = $1`,
        [user],
      );
      expect(rows[0].n).toBe(1);
    });

    it('answers every hostile request and batch with no 5xx, no stack and a typed problem for every error', async () => {
      await expectNoHostileFault('express-postgres', examples[1]!);
    });

    it('answers a history revision no todo can have 404 as the SQLite example does, never a 500 from pg', async () => {
      await expectNoSuchVersions(examples[0]!);
    });
  },
);
