import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type Database from 'better-sqlite3';
import pg from 'pg';
import { BATCH_MIN_LIMITS, BATCH_PATH, formatBatchLink } from 'sw-outbox/wire';
import {
  createOutboxKit,
  DEFAULT_KIT_RETENTION_MS,
  invalid,
  json,
  type LedgerStore,
  openSqliteDatabase,
  postgresLedger,
  sqliteLedger,
  valid,
} from '../server/kit/index.ts';
import { kitRequestListener } from '../server/kit/node-http.ts';
import { postgresLedgerSchema } from '../server/store/ledger-schema.ts';
import { floorRoute } from './kit-floor.ts';

/**
 * One write route for the kit's cost (SPEC §19, §22.1): `POST /api/notes` creating a note, served
 * by `node:http` either through the kit (`KIT_BENCH_MODE=kit`: the three checks, the ledger, the
 * write in the key's transaction) or bare (`bare`: the same auth, body, validation and insert,
 * as an app writes it without a ledger) or, on PostgreSQL, as the contract's floor (`floor`: the
 * ledger's statements written by hand on raw `pg`, no kit; bench/kit-floor.ts).
 * `KIT_BENCH_STORE` is `sqlite` (`KIT_BENCH_DB` a file, WAL, synchronous=FULL) or `postgres`
 * (`KIT_BENCH_DB` a URL, `KIT_BENCH_SCHEMA`). Prints `listening on http://127.0.0.1:<port>`.
 */

const MODES = ['bare', 'floor', 'kit'] as const;
const mode = MODES.find((name) => name === process.env.KIT_BENCH_MODE) ?? 'bare';
const store = process.env.KIT_BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite';
const target = process.env.KIT_BENCH_DB!;
const schema = process.env.KIT_BENCH_SCHEMA ?? 'kit_bench';

interface Note {
  title: string;
  body: string;
}

/** The insert, on the client the kit hands the handler (or the pool / database when bare). */
type Insert<Tx> = (tx: Tx, owner: string, id: string, note: Note, now: number) => unknown;

function principalOf(header: string | null | undefined): string | null {
  return /^Bearer ([A-Za-z0-9_.@-]{1,64})$/.exec(header ?? '')?.[1] ?? null;
}

function readNote(body: unknown) {
  const { title, body: text } = (body ?? {}) as Record<string, unknown>;
  if (typeof title !== 'string' || title.length < 1 || title.length > 200) {
    return invalid('a title of 1 to 200 characters');
  }
  if (text !== undefined && (typeof text !== 'string' || text.length > 10_000)) {
    return invalid('a body of at most 10000 characters');
  }
  return valid({ title, body: (text as string | undefined) ?? '' });
}

const noteJson = (id: string, note: Note) => ({ id, revision: 1, ...note });

async function open(): Promise<{
  ledger: () => Promise<LedgerStore<unknown>>;
  insert: Insert<unknown>;
  bare: Insert<void>;
  floor?: (request: IncomingMessage, response: ServerResponse) => void;
}> {
  if (store === 'sqlite') {
    const db = openSqliteDatabase(target);
    db.exec(`CREATE TABLE IF NOT EXISTS notes (owner TEXT NOT NULL, id TEXT NOT NULL,
      revision INTEGER NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL,
      PRIMARY KEY (owner, id))`);
    const statement = db.prepare(
      'INSERT INTO notes (owner, id, revision, title, body, created_at) VALUES (?, ?, 1, ?, ?, ?)',
    );
    const insert: Insert<Database.Database> = (_tx, owner, id, note, now) =>
      statement.run(owner, id, note.title, note.body, now);
    return {
      ledger: async () => sqliteLedger(db) as LedgerStore<unknown>,
      insert: insert as Insert<unknown>,
      bare: (_none, owner, id, note, now) => insert(db, owner, id, note, now),
    };
  }
  // Pipeline mode: the ledger's BEGIN goes out with the handler's insert (kit/postgres-ledger.ts).
  const pool = new pg.Pool({ connectionString: target, max: 16, pipeline: true });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".notes (owner text NOT NULL,
    id text NOT NULL, revision integer NOT NULL, title text NOT NULL, body text NOT NULL,
    created_at bigint NOT NULL, PRIMARY KEY (owner, id))`);
  const sql = `INSERT INTO "${schema}".notes (owner, id, revision, title, body, created_at) VALUES ($1, $2, 1, $3, $4, $5)`;
  const insert: Insert<pg.PoolClient | pg.Pool> = (tx, owner, id, note, now) =>
    tx.query(sql, [owner, id, note.title, note.body, now]);
  const ledger = `"${schema}".idempotency_ledger`;
  const floor = async () => {
    for (const statement of postgresLedgerSchema(ledger)) await pool.query(statement);
    return floorRoute<Note>({
      pool,
      schema,
      principalOf,
      readNote,
      newId: () => `note-${randomUUID()}`,
      noteJson,
      insertSql: sql,
      insertValues: (owner, id, note, now) => [owner, id, note.title, note.body, now],
      retentionSeconds: Math.floor(DEFAULT_KIT_RETENTION_MS / 1000),
      batchLink: formatBatchLink(BATCH_PATH, BATCH_MIN_LIMITS),
    });
  };
  return {
    ledger: async () => (await postgresLedger(pool, { schema })) as LedgerStore<unknown>,
    insert: insert as Insert<unknown>,
    bare: (_none, owner, id, note, now) => insert(pool, owner, id, note, now),
    floor: mode === 'floor' ? await floor() : undefined,
  };
}

const database = await open();

function send(response: ServerResponse, status: number, body: unknown, etag?: string): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...(etag ? { etag } : {}),
  });
  response.end(text);
}

/** The route without the kit: what an app runs when it keeps no ledger. */
async function bare(request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (request.method !== 'POST' || request.url !== '/api/notes') {
    return send(response, 404, { type: 'not-found' });
  }
  const owner = principalOf(request.headers.authorization);
  if (!owner) return send(response, 401, { type: 'auth-required' });
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return send(response, 400, { type: 'malformed-body' });
  }
  const note = readNote(body);
  if (!note.ok) return send(response, 422, { type: 'validation-failed' });
  const id = `note-${randomUUID()}`;
  await database.bare(undefined, owner, id, note.value, Date.now());
  send(response, 201, noteJson(id, note.value), '"1"');
}

let listener: (request: IncomingMessage, response: ServerResponse) => void;
if (mode === 'kit') {
  const kit = createOutboxKit<unknown>({
    ledger: await database.ledger(),
    authenticate: (request) => principalOf(request.headers.get('authorization')),
  });
  kit.route({
    method: 'POST',
    path: '/api/notes',
    validate: ({ body }) => readNote(body),
    handle({ tx, principal, value, now, defer }) {
      const id = `note-${randomUUID()}`;
      // The answer is made from the input: the insert is deferred, not awaited (kit/ledger.ts).
      const inserted = database.insert(tx, principal, id, value, now);
      if (inserted instanceof Promise) defer(inserted);
      return json(201, noteJson(id, value), { etag: 1 });
    },
  });
  listener = kitRequestListener(kit);
} else if (mode === 'floor') {
  if (!database.floor) throw new Error('the floor is measured on PostgreSQL only');
  listener = database.floor;
} else {
  listener = (request, response) => {
    bare(request, response).catch(() => {
      if (!response.headersSent) send(response, 500, { type: 'internal-error' });
    });
  };
}

const server = createServer(listener);
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
