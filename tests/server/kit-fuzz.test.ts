import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETENTION_HEADER } from '../../server/kit/index.ts';
import { kitRequestListener } from '../../server/kit/node-http.ts';
import { PROBLEM, PROBLEM_CONTENT_TYPE } from '../../shared/wire/protocol.ts';
import { dropSchema, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';
import { hostileBatch } from './hostile-batches.ts';
import {
  describeRequest,
  ECHO_PATTERN,
  type HostileRequest,
  hostileRequest,
  requestBytes,
} from './hostile-requests.ts';
import { openTodoApp, type TodoApp } from './kit-todo-app.ts';
import { type RawAnswer, sendRaw } from './raw-http.ts';

/**
 * The reference server's generated hostile requests and batches (hostile-requests.ts,
 * hostile-batches.ts) sent over real HTTP to a kit app — the todo app serving `/api/notes`,
 * through the kit's `node:http` bridge — on SQLite and PostgreSQL. Every answer the kit gives
 * (it carries the retention header) must be no 5xx and, for an error, `application/problem+json`
 * with a known `type` that does not echo the path; items of a batch answer alike. What Node's own
 * parser refuses before the kit sees it may be a bare 400, but never a 5xx.
 *
 * `FUZZ_KIT_RUNS` (default 300) requests then a third as many batches, in sequence;
 * `FUZZ_SEED` replays a run.
 */

const RUNS = Number(process.env.FUZZ_KIT_RUNS || 300);
const SEED = Number(process.env.FUZZ_SEED || Math.floor(Math.random() * 2 ** 31));
/**
 * Node's own limits on receiving a request: a body announced and never sent is cut by the
 * server (408), as any deployment configures it; the kit reads what the server hands it.
 */
const TIMEOUTS = { headersTimeout: 500, requestTimeout: 1000, connectionsCheckingInterval: 200 };
const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(PROBLEM));

/** A kit app on a port, with the fixture the generated requests refer to. */
class KitTarget {
  readonly #notes: Record<'A' | 'B' | 'new', string> = { A: '', B: '', new: '' };
  readonly #revisions = new Map<string, number>();
  port = 0;

  constructor(
    readonly name: string,
    readonly app: TodoApp<unknown>,
    readonly server: Server,
  ) {}

  async arrange(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    for (const [name, user] of [
      ['A', 'alice'],
      ['B', 'bob'],
    ] as const) {
      const request = new Request('http://kit.test/api/notes', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${user}`,
          'idempotency-key': `"fuzz-fixture-${name}-0000"`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ title: `fixture ${name}` }),
      });
      const created = await this.app.kit.fetch(request);
      if (created.status !== 201) throw new Error(`fixture ${name}: ${created.status}`);
      this.#notes[name] = (await created.json()).id;
    }
    this.#notes.new = this.#notes.A;
  }

  /** Tokens are user names here; `otherSecret` stands for one no user has. */
  fill = (text: string): string =>
    text.replace(
      /\{(A|B|new|token:(\w+)|rev:(\w+))\}/g,
      (_match, name: string, token?: string, note?: string) => {
        if (token !== undefined) return token === 'otherSecret' ? 'not a token!' : token;
        if (note !== undefined) {
          const id = this.#notes[note as 'A' | 'B' | 'new'];
          return `"${this.#revisions.get(id) ?? 1}"`;
        }
        return this.#notes[name as 'A' | 'B' | 'new'];
      },
    );

  async send(request: HostileRequest): Promise<RawAnswer> {
    const answer = await sendRaw(this.port, [requestBytes(request, this.fill)], {
      head: request.method === 'HEAD',
      timeoutMs: 10_000,
    });
    this.#learn(answer.status, answer.body);
    for (const item of batchItems(answer) ?? []) this.#learn(item.status, item.body);
    return answer;
  }

  #learn(status: number | undefined, body: string): void {
    if (status === 201) {
      const id = /"id":"(todo-[0-9a-f]{24})"/.exec(body)?.[1];
      if (id) this.#notes.new = id;
    }
    for (const [, id, revision] of body.matchAll(/"id":"(todo-[0-9a-f]{24})","revision":(\d+)/g))
      this.#revisions.set(id!, Number(revision));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    await this.app.close();
  }
}

function batchItems(
  answer: RawAnswer,
): Array<{ status: number; headers: Record<string, string>; body: string }> | undefined {
  if (answer.status !== 200 || !answer.body.startsWith('{"items":[{"status":')) return undefined;
  try {
    return JSON.parse(answer.body).items;
  } catch {
    return undefined;
  }
}

function statusFaults(
  status: number,
  headers: Record<string, string>,
  body: string | undefined,
): string[] {
  const faults: string[] = [];
  if (status >= 500) faults.push(`${status}`);
  if (status >= 400) {
    if (!headers['content-type']?.startsWith(PROBLEM_CONTENT_TYPE)) {
      faults.push(`a ${status} that is not problem+json (${headers['content-type']})`);
    } else if (body !== undefined) {
      let problem: { type?: unknown; status?: unknown } | undefined;
      try {
        problem = JSON.parse(body);
      } catch {
        faults.push('a problem body that is not JSON');
      }
      if (problem && !KNOWN_TYPES.has(problem.type as string))
        faults.push(`unknown problem type ${JSON.stringify(problem.type)}`);
      if (problem && problem.status !== status) faults.push('problem status differs from HTTP');
    }
    if (body !== undefined && ECHO_PATTERN.test(body)) faults.push('the answer echoes the path');
  }
  return faults;
}

function faultsOf(answer: RawAnswer, head: boolean): string[] {
  if (answer.ending !== 'answered' || answer.status === undefined) {
    return [`no answer: the connection ended (${answer.ending})`];
  }
  // Not the kit's: Node's parser refused the bytes before any Request existed.
  if (answer.headers[RETENTION_HEADER] === undefined) {
    return answer.status >= 500 ? [`${answer.status} from outside the kit`] : [];
  }
  const faults = statusFaults(answer.status, answer.headers, head ? undefined : answer.body);
  for (const [index, item] of (batchItems(answer) ?? []).entries()) {
    faults.push(
      ...statusFaults(item.status, item.headers, item.body).map((f) => `item ${index}: ${f}`),
    );
  }
  return faults;
}

async function fuzz(target: KitTarget): Promise<{ failures: string[]; statuses: string }> {
  const failures: string[] = [];
  const statuses = new Map<string, number>();
  const requests = fc.sample(hostileRequest, { numRuns: RUNS, seed: SEED });
  const batches = fc.sample(hostileBatch, { numRuns: Math.ceil(RUNS / 3), seed: SEED + 1 });
  // Node's server hands CONNECT to its `connect` event, never to a request listener.
  const inputs = [...requests, ...batches].filter((request) => request.method !== 'CONNECT');
  for (const request of inputs) {
    const answer = await target.send(request);
    for (const fault of faultsOf(answer, request.method === 'HEAD')) {
      failures.push(
        `${target.name}: ${fault}\n  input: ${describeRequest(request)}\n  answer: ${answer.status} ${answer.body.slice(0, 300)}`,
      );
    }
    const key = String(answer.status ?? answer.ending);
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  return { failures, statuses: [...statuses].map(([status, n]) => `${status}×${n}`).join(' ') };
}

describe(`hostile requests to a kit app (seed ${SEED})`, () => {
  const schema = newSchema('kit_fuzz');
  const targets: KitTarget[] = [];

  beforeAll(async () => {
    const sqlite = await openTodoApp({ kind: 'sqlite', collection: '/api/notes' });
    targets.push(
      new KitTarget('SQLite', sqlite, createServer(TIMEOUTS, kitRequestListener(sqlite.kit))),
    );
    if (!PG_SKIP_REASON) {
      const postgres = await openTodoApp({
        kind: 'postgres',
        connectionString: PG_URL,
        schema,
        collection: '/api/notes',
      });
      targets.push(
        new KitTarget(
          'PostgreSQL',
          postgres,
          createServer(TIMEOUTS, kitRequestListener(postgres.kit)),
        ),
      );
    }
    for (const target of targets) await target.arrange();
  });
  afterAll(async () => {
    for (const target of targets) await target.close();
    if (!PG_SKIP_REASON) await dropSchema(schema);
  });

  it('answers every generated request and batch with no 5xx and a typed problem for every error', async () => {
    const results = await Promise.all(targets.map(fuzz));
    for (const [index, result] of results.entries()) {
      console.log(`kit fuzz ${targets[index]!.name} (seed ${SEED}): ${result.statuses}`);
    }
    const failures = results.flatMap((result) => result.failures);
    expect(failures.slice(0, 10), `FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);
});
