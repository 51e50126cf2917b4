import fc from 'fast-check';
import { PROBLEM, PROBLEM_CONTENT_TYPE } from '../../shared/wire/protocol.ts';
import { hostileBatch } from './hostile-batches.ts';
import {
  describeRequest,
  ECHO_PATTERN,
  type HostileRequest,
  hostileRequest,
  requestBytes,
} from './hostile-requests.ts';
import { type RawAnswer, sendRaw } from './raw-http.ts';

/**
 * Sends the reference server's generated hostile requests and batches (hostile-requests.ts,
 * hostile-batches.ts) to a server that keeps SPEC §15 for a todo collection — a kit app in a
 * test, or one of the examples in its own process — and judges every answer: no 5xx, and every
 * error a typed problem that does not echo the path.
 */

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(PROBLEM));
/** A stack trace in a body: `at fn (file:line:col)` or `at file:line:col`. */
const STACK_PATTERN = /\bat (?:\S+ \()?(?:file:\/\/|node:|\/)[^\s)]*:\d+:\d+/;
/** Ids of the todo apps (kit-todo-app.ts and the examples). */
const TODO_ID = 'todo-[0-9a-f-]{24,36}';

/** A server under the fuzz, and what the generated requests refer to on it. */
export class HostileClient {
  readonly #records: Record<'A' | 'B' | 'new', string> = { A: '', B: '', new: '' };
  readonly #revisions = new Map<string, number>();

  /**
   * @param collection where the server serves the todos; the generated requests' `/api/notes`
   *   is rewritten to it.
   */
  constructor(
    readonly name: string,
    readonly port: number,
    readonly collection = '/api/notes',
  ) {}

  /** Makes alice's and bob's records `{A}` and `{B}` through the server's create route. */
  async arrange(): Promise<void> {
    for (const [name, user] of [
      ['A', 'alice'],
      ['B', 'bob'],
    ] as const) {
      const created = await fetch(`http://127.0.0.1:${this.port}${this.collection}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${user}`,
          'idempotency-key': `"fuzz-fixture-${name}-${this.port}"`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ title: `fixture ${name}` }),
      });
      if (created.status !== 201) throw new Error(`fixture ${name}: ${created.status}`);
      this.#records[name] = (await created.json()).id;
    }
    this.#records.new = this.#records.A;
  }

  /** Tokens are user names here; `otherSecret` stands for one no user has. */
  fill = (text: string): string =>
    text
      .replace(
        /\{(A|B|new|token:(\w+)|rev:(\w+))\}/g,
        (_match, name: string, token?: string, note?: string) => {
          if (token !== undefined) return token === 'otherSecret' ? 'not a token!' : token;
          if (note !== undefined) {
            const id = this.#records[note as 'A' | 'B' | 'new'];
            return `"${this.#revisions.get(id) ?? 1}"`;
          }
          return this.#records[name as 'A' | 'B' | 'new'];
        },
      )
      .replaceAll('/api/notes', this.collection);

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
      const id = new RegExp(`"id":"(${TODO_ID})"`).exec(body)?.[1];
      if (id) this.#records.new = id;
    }
    for (const [, id, revision] of body.matchAll(
      new RegExp(`"id":"(${TODO_ID})","revision":(\\d+)`, 'g'),
    ))
      this.#revisions.set(id!, Number(revision));
  }
}

/**
 * Which answers are judged in full. `kit`: those the kit gave (they carry `header`); what Node's
 * parser refused before the kit saw it may be a bare 4xx. `app`: every answer with a body — an
 * app on the kit answers its own routes and errors with problems too; a bare 4xx without a
 * body (Node's parser, a request timeout) passes.
 */
export type Judged = { kind: 'kit'; header: string } | { kind: 'app' };

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
  if (body !== undefined && STACK_PATTERN.test(body)) faults.push('a stack trace in the body');
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

/** What is wrong with one answer (nothing: `[]`). */
export function faultsOf(answer: RawAnswer, head: boolean, judged: Judged): string[] {
  if (answer.ending !== 'answered' || answer.status === undefined) {
    return [`no answer: the connection ended (${answer.ending})`];
  }
  const outside =
    judged.kind === 'kit'
      ? answer.headers[judged.header] === undefined
      : answer.status >= 400 && answer.body === '' && !answer.headers['content-type'];
  if (outside) return answer.status >= 500 ? [`${answer.status} from outside the app`] : [];
  const faults = statusFaults(answer.status, answer.headers, head ? undefined : answer.body);
  for (const [index, item] of (batchItems(answer) ?? []).entries()) {
    faults.push(
      ...statusFaults(item.status, item.headers, item.body).map((f) => `item ${index}: ${f}`),
    );
  }
  return faults;
}

/**
 * Sends `runs` generated requests, then a third as many batches, one after another; returns
 * every fault with the input that caused it, and a count of statuses.
 */
export async function sendHostile(
  client: HostileClient,
  { runs, seed, judged }: { runs: number; seed: number; judged: Judged },
): Promise<{ failures: string[]; statuses: string }> {
  const failures: string[] = [];
  const statuses = new Map<string, number>();
  const requests = fc.sample(hostileRequest, { numRuns: runs, seed });
  const batches = fc.sample(hostileBatch, { numRuns: Math.ceil(runs / 3), seed: seed + 1 });
  // Node's server hands CONNECT to its `connect` event, never to a request listener.
  const inputs = [...requests, ...batches].filter((request) => request.method !== 'CONNECT');
  for (const request of inputs) {
    const answer = await client.send(request);
    for (const fault of faultsOf(answer, request.method === 'HEAD', judged)) {
      failures.push(
        `${client.name}: ${fault}\n  input: ${describeRequest(request)}\n  answer: ${answer.status} ${answer.body.slice(0, 300)}`,
      );
    }
    const key = String(answer.status ?? answer.ending);
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  return { failures, statuses: [...statuses].map(([status, n]) => `${status}×${n}`).join(' ') };
}
