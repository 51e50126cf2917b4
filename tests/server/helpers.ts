import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { type RunningServer, type StartOptions, startServer } from '../../server/index.ts';
import type { BatchItem } from '../../shared/wire/batch.ts';

/**
 * Request timeouts of test servers: short, so that tests of slow clients finish quickly. Only
 * receiving a request is timed, so slow answers (the "delay" fault) are not cut.
 */
export const TEST_TIMEOUTS = { headersTimeoutMs: 1000, requestTimeoutMs: 2000 } as const;

/** A test server on 127.0.0.1 and a free port, admin routes on, {@link TEST_TIMEOUTS}. */
export function startTestServer(options: Omit<StartOptions, 'port'>): Promise<RunningServer> {
  return startServer({ admin: true, ...TEST_TIMEOUTS, ...options, port: 0 });
}

/** A fresh request id of the engine's shape (SPEC §9). */
export function newKey(prefix = 'notes'): string {
  return `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/** A principal no other test uses. */
export function newUser(prefix = 'u'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** `Content-Digest` of a body, as the engine sends it. */
export function digestOf(body: string): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

/** What a test sees of a response. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON members
  json: any;
}

export interface WriteOptions {
  key?: string | null;
  /** A JSON value (serialised) or raw text. */
  body?: unknown;
  rawBody?: string;
  ifMatch?: number | string;
  /** `false` omits `Content-Digest`; a string sends that value. */
  digest?: boolean | string;
  token?: string;
  headers?: Record<string, string>;
}

/** A small client for one server and one user. */
export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  static async login(url: string, user: string): Promise<Api> {
    const answer = await send(
      url,
      'POST',
      '/auth/login',
      { 'content-type': 'application/json' },
      JSON.stringify({ user }),
    );
    if (answer.status !== 200) throw new Error(`login failed: ${answer.status} ${answer.text}`);
    return new Api(url, answer.json.token);
  }

  get(path: string, token = this.token): Promise<Answer> {
    return send(this.url, 'GET', path, { authorization: `Bearer ${token}` });
  }

  /** A write with an idempotency key (fresh unless given; `null` omits it). */
  write(method: string, path: string, options: WriteOptions = {}): Promise<Answer> {
    const { headers, body } = writeRequest(options);
    headers.authorization = `Bearer ${options.token ?? this.token}`;
    return send(this.url, method, path, { ...headers, ...options.headers }, body ?? undefined);
  }

  /** `POST /sync/batch` with these items (SPEC §15.1). */
  batch(items: readonly BatchItem[], options: { token?: string; path?: string } = {}) {
    return send(
      this.url,
      'POST',
      options.path ?? '/sync/batch',
      {
        authorization: `Bearer ${options.token ?? this.token}`,
        'content-type': 'application/json',
      },
      JSON.stringify({ items }),
    );
  }

  create(title: string, options: WriteOptions = {}): Promise<Answer> {
    return this.write('POST', '/api/notes', { body: { title }, ...options });
  }

  patch(id: string, revision: number, body: unknown, options: WriteOptions = {}): Promise<Answer> {
    return this.write('PATCH', `/api/notes/${id}`, { body, ifMatch: revision, ...options });
  }

  remove(id: string, revision: number, options: WriteOptions = {}): Promise<Answer> {
    return this.write('DELETE', `/api/notes/${id}`, { ifMatch: revision, ...options });
  }

  /** `GET /__stats?user=…` of this server. */
  async stats(user: string) {
    return (await send(this.url, 'GET', `/__stats?user=${encodeURIComponent(user)}`, {})).json as {
      process: {
        effects: number;
        replays: number;
        inProgress: number;
        effectsByKey: Record<string, number>;
      };
      store: { notes: number; deleted: number; revisionSum: number; receipts: number };
    };
  }
}

/** The headers (without auth) and body of a write, as {@link Api.write} sends them. */
function writeRequest(options: WriteOptions): {
  headers: Record<string, string>;
  body: string | null;
} {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? newKey() : options.key;
  if (key !== null) headers['idempotency-key'] = `"${key}"`;
  const body =
    options.rawBody ?? (options.body === undefined ? null : JSON.stringify(options.body));
  if (body !== null) {
    headers['content-type'] = 'application/json';
    if (options.digest !== false) {
      headers['content-digest'] =
        typeof options.digest === 'string' ? options.digest : digestOf(body);
    }
  }
  if (options.ifMatch !== undefined) headers['if-match'] = `"${options.ifMatch}"`;
  return { headers, body };
}

/** A batch item for the write {@link Api.write} would send with the same options. */
export function batchItem(method: string, path: string, options: WriteOptions = {}): BatchItem {
  const { headers, body } = writeRequest(options);
  return { method, path, headers: { ...headers, ...options.headers }, body };
}

/** One HTTP request with fetch; the body is read as text and parsed when it is JSON. */
export async function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  const response = await fetch(new URL(path, url), { method, headers, body });
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Polls `check` every 10 ms until it returns true or `timeoutMs` passes (then throws). */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** PostgreSQL for the tests: `DATABASE_URL` or the machines' default. */
export const PG_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** Why the PostgreSQL tests are skipped, or `undefined` when PostgreSQL answers. */
export const PG_SKIP_REASON: string | undefined = await (async () => {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${PG_URL.replace(/\/\/[^@/]*@/, '//…@')} is not reachable (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => {});
  }
})();

/** A schema name no other test file uses. */
export function newSchema(prefix: string): string {
  return `${prefix}_${process.pid}_${randomUUID().slice(0, 8)}`.replaceAll('-', '_').toLowerCase();
}

/** Drops a test schema. */
export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
