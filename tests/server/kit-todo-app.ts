import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import pg from 'pg';
import {
  createOutboxKit,
  invalid,
  json,
  type LedgerStore,
  notFound,
  type OutboxKit,
  type OutboxKitOptions,
  openSqliteDatabase,
  postgresLedger,
  revisionConflict,
  sqliteLedger,
  valid,
} from '../../server/kit/index.ts';

/**
 * A small todo API on the kit, as a user would write one: its own tables (`todos`, and
 * `todo_history` for SPEC §10.1), its own SQL, each write handler using the database client the
 * kit hands it inside the transaction. One app, two databases (better-sqlite3, `pg`), so one
 * conformance suite runs on both.
 *
 * Auth: `Authorization: Bearer <user>` names the principal; `Bearer expired` is refused (401).
 * Fault switches for tests: a title starting with `explode` makes the create handler throw after
 * it wrote its row; `slow:<ms>` makes it wait that long inside the transaction.
 */

/** A todo as the API shows it. */
export interface Todo {
  id: string;
  revision: number;
  title: string;
  done: boolean;
}

/** The app's own statements, one implementation per database; `tx` is the kit's client. */
interface TodoSql<Tx> {
  insert(tx: Tx, principal: string, todo: Todo, now: number): Promise<void>;
  get(tx: Tx, principal: string, id: string): Promise<(Todo & { deleted: boolean }) | undefined>;
  update(tx: Tx, principal: string, todo: Todo, deleted: boolean, now: number): Promise<void>;
  keepVersion(tx: Tx, principal: string, old: Todo, key: string, now: number): Promise<void>;
}

/** What a test reads besides the API: the app's own table. */
export interface TodoApp<Tx> {
  kit: OutboxKit<Tx>;
  /** Another kit with the same routes and options over another ledger (a second instance). */
  kitWith(ledger: LedgerStore<Tx>): OutboxKit<Tx>;
  /** The app's database: the better-sqlite3 `Database`, or the `pg` pool. */
  database: unknown;
  /** Rows of `todos` for a principal (live and deleted): every create is one. */
  countTodos(principal: string): Promise<number>;
  /** Ledger entries of a principal, claims included. */
  countLedger(principal: string): Promise<number>;
  /** The principal's live todos (the app's own read route). */
  list(principal: string): Promise<Todo[]>;
  /** One live todo. */
  read(principal: string, id: string): Promise<Todo | undefined>;
  /** A superseded version (SPEC §10.1), as `GET …/history/:revision` answers it. */
  version(principal: string, id: string, revision: number): Promise<Todo | undefined>;
  close(): Promise<void>;
}

/** Which database, and what else the kit is given. */
export type TodoAppOptions = (
  | { kind: 'sqlite'; path?: string }
  | {
      kind: 'postgres';
      connectionString: string;
      schema: string;
      poolSize?: number;
      /** node-postgres's pipeline mode on the app's pool (the kit then pipelines its claim). */
      pipeline?: boolean;
    }
) & {
  /** Where the collection is served; default `/api/todos`. */
  collection?: string;
} & Partial<Omit<OutboxKitOptions<unknown>, 'ledger' | 'authenticate'>>;

const TODO_ID = /^[A-Za-z0-9_-]{1,80}$/;
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Bearer auth of the tests: the token is the user. */
export function bearerUser(request: Request): string | null {
  const match = /^Bearer ([A-Za-z0-9_.@-]{1,64})$/.exec(request.headers.get('authorization') ?? '');
  if (!match || match[1] === 'expired') return null;
  return match[1]!;
}

function newTodoId(): string {
  return `todo-${randomBytes(12).toString('hex')}`;
}

function todoJson(todo: Todo) {
  return { id: todo.id, revision: todo.revision, title: todo.title, done: todo.done };
}

function historyHref(collection: string, id: string, revision: number): string {
  return `${collection}/${encodeURIComponent(id)}/history/${revision}`;
}

/** Reads `{ title?, done? }`: a title is 1–200 storable characters, done a boolean. */
function readPatch(body: unknown, create: boolean) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid('the body must be an object');
  }
  // `body` is accepted (a storable string) and not kept, so the reference server's generated
  // hostile notes (`{ title, body }`) reach this app's handlers in the fuzz test.
  const { title, done, body: text, ...rest } = body as Record<string, unknown>;
  const issues: Array<{ path: string; message: string }> = [];
  if (
    text !== undefined &&
    (typeof text !== 'string' || text.length > 10_000 || UNSTORABLE.test(text))
  ) {
    issues.push({ path: 'body', message: 'a text of at most 10000 storable characters' });
  }
  if (Object.keys(rest).length > 0) issues.push({ path: '', message: 'unknown fields' });
  if (title === undefined ? create : typeof title !== 'string' || title.length < 1) {
    issues.push({ path: 'title', message: 'a title of 1 to 200 characters' });
  } else if (typeof title === 'string' && (title.length > 200 || UNSTORABLE.test(title))) {
    issues.push({ path: 'title', message: 'a title of 1 to 200 storable characters' });
  }
  if (done !== undefined && typeof done !== 'boolean') {
    issues.push({ path: 'done', message: 'a boolean' });
  }
  if (!create && title === undefined && done === undefined && text === undefined) {
    issues.push({ path: '', message: 'a patch changes title or done' });
  }
  if (issues.length > 0) return invalid('the todo is not valid', issues);
  return valid({ title: title as string | undefined, done: done as boolean | undefined });
}

function readId(params: Record<string, string>) {
  return TODO_ID.test(params.id ?? '') ? valid(params.id!) : invalid('no such todo id');
}

/** Registers the todo routes on a kit. */
function todoRoutes<Tx>(kit: OutboxKit<Tx>, sql: TodoSql<Tx>, collection: string): void {
  kit.route({
    method: 'POST',
    path: collection,
    validate: ({ body }) => readPatch(body, true),
    async handle({ tx, principal, value, now }) {
      const todo: Todo = { id: newTodoId(), revision: 1, title: value.title!, done: !!value.done };
      await sql.insert(tx, principal, todo, now);
      if (todo.title.startsWith('explode')) throw new Error('the handler failed after its write');
      const slow = /^slow:(\d+)/.exec(todo.title);
      if (slow) await new Promise((resolve) => setTimeout(resolve, Number(slow[1])));
      return json(201, todoJson(todo), { etag: 1 });
    },
  });
  kit.route({
    method: 'PATCH',
    path: `${collection}/:id`,
    ifMatch: true,
    validate: ({ params, body }) => {
      const id = readId(params);
      if (!id.ok) return id;
      const patch = readPatch(body, false);
      return patch.ok ? valid({ id: id.value, ...patch.value }) : patch;
    },
    async handle({ tx, principal, value, ifMatch, key, now }) {
      const old = await sql.get(tx, principal, value.id);
      if (!old || old.deleted) return notFound();
      if (old.revision !== ifMatch) {
        return revisionConflict({
          currentRevision: old.revision,
          historyHref: historyHref(collection, old.id, old.revision),
        });
      }
      const todo: Todo = {
        id: old.id,
        revision: old.revision + 1,
        title: value.title ?? old.title,
        done: value.done ?? old.done,
      };
      await sql.keepVersion(tx, principal, old, key, now);
      await sql.update(tx, principal, todo, false, now);
      return json(200, todoJson(todo), { etag: todo.revision });
    },
  });
  kit.route({
    method: 'DELETE',
    path: `${collection}/:id`,
    ifMatch: true,
    validate: ({ params }) => readId(params),
    async handle({ tx, principal, value: id, ifMatch, key, now }) {
      const old = await sql.get(tx, principal, id);
      if (!old || old.deleted) return notFound();
      if (old.revision !== ifMatch) {
        return revisionConflict({
          currentRevision: old.revision,
          historyHref: historyHref(collection, old.id, old.revision),
        });
      }
      await sql.keepVersion(tx, principal, old, key, now);
      await sql.update(tx, principal, { ...old, revision: old.revision + 1 }, true, now);
      return json(
        200,
        { id, revision: old.revision + 1, deleted: true },
        { etag: old.revision + 1 },
      );
    },
  });
}

/** Opens the todo app on SQLite or PostgreSQL, with its kit. */
export async function openTodoApp(options: TodoAppOptions): Promise<TodoApp<unknown>> {
  const { kind: _kind, ...kitOptions } = options as TodoAppOptions & Record<string, unknown>;
  for (const name of ['path', 'connectionString', 'schema', 'poolSize', 'pipeline', 'collection']) {
    delete kitOptions[name];
  }
  const collection = options.collection ?? '/api/todos';
  return options.kind === 'sqlite'
    ? (sqliteTodoApp(options.path ?? ':memory:', kitOptions, collection) as TodoApp<unknown>)
    : ((await postgresTodoApp(options, kitOptions, collection)) as TodoApp<unknown>);
}

type KitRest = Partial<Omit<OutboxKitOptions<unknown>, 'ledger' | 'authenticate'>>;

function build<Tx>(
  ledger: LedgerStore<Tx>,
  rest: KitRest,
  sql: TodoSql<Tx>,
  collection: string,
): OutboxKit<Tx> {
  const kit = createOutboxKit<Tx>({ onError() {}, ...rest, ledger, authenticate: bearerUser });
  todoRoutes(kit, sql, collection);
  return kit;
}

function sqliteTodoApp(
  path: string,
  rest: KitRest,
  collection: string,
): TodoApp<Database.Database> {
  const db = openSqliteDatabase(path);
  db.exec(`
    CREATE TABLE IF NOT EXISTS todos (principal TEXT NOT NULL, id TEXT NOT NULL,
      revision INTEGER NOT NULL, title TEXT NOT NULL, done INTEGER NOT NULL,
      deleted INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL, PRIMARY KEY (principal, id));
    CREATE TABLE IF NOT EXISTS todo_history (principal TEXT NOT NULL, id TEXT NOT NULL,
      revision INTEGER NOT NULL, title TEXT NOT NULL, done INTEGER NOT NULL, superseded_by TEXT,
      superseded_at INTEGER NOT NULL, PRIMARY KEY (principal, id, revision));`);
  type Row = { id: string; revision: number; title: string; done: number; deleted: number };
  const sql: TodoSql<Database.Database> = {
    async insert(tx, principal, todo, now) {
      tx.prepare(
        'INSERT INTO todos (principal, id, revision, title, done, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(principal, todo.id, todo.revision, todo.title, todo.done ? 1 : 0, now);
    },
    async get(tx, principal, id) {
      const row = tx
        .prepare<[string, string], Row>(
          'SELECT id, revision, title, done, deleted FROM todos WHERE principal = ? AND id = ?',
        )
        .get(principal, id);
      return row && { ...row, done: row.done === 1, deleted: row.deleted === 1 };
    },
    async update(tx, principal, todo, deleted, now) {
      tx.prepare(
        'UPDATE todos SET revision = ?, title = ?, done = ?, deleted = ?, updated_at = ? WHERE principal = ? AND id = ?',
      ).run(todo.revision, todo.title, todo.done ? 1 : 0, deleted ? 1 : 0, now, principal, todo.id);
    },
    async keepVersion(tx, principal, old, key, now) {
      tx.prepare(
        'INSERT INTO todo_history (principal, id, revision, title, done, superseded_by, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(principal, old.id, old.revision, old.title, old.done ? 1 : 0, key, now);
    },
  };
  const kit = build(sqliteLedger(db), rest, sql, collection);
  return {
    kit,
    kitWith: (ledger) => build(ledger, rest, sql, collection),
    database: db,
    async countTodos(principal) {
      const row = db.prepare('SELECT count(*) AS n FROM todos WHERE principal = ?').get(principal);
      return (row as { n: number }).n;
    },
    async countLedger(principal) {
      const row = db
        .prepare('SELECT count(*) AS n FROM idempotency_ledger WHERE principal = ?')
        .get(principal);
      return (row as { n: number }).n;
    },
    async list(principal) {
      return db
        .prepare<[string], Row>(
          'SELECT id, revision, title, done, deleted FROM todos WHERE principal = ? AND deleted = 0 ORDER BY rowid',
        )
        .all(principal)
        .map((row) => todoJson({ ...row, done: row.done === 1 }));
    },
    async read(principal, id) {
      const row = await sql.get(db, principal, id);
      return row && !row.deleted ? todoJson(row) : undefined;
    },
    async version(principal, id, revision) {
      const row = db
        .prepare<[string, string, number], Row>(
          'SELECT id, revision, title, done, 0 AS deleted FROM todo_history WHERE principal = ? AND id = ? AND revision = ?',
        )
        .get(principal, id, revision);
      return row && todoJson({ ...row, done: row.done === 1 });
    },
    async close() {
      db.close();
    },
  };
}

async function postgresTodoApp(
  options: { connectionString: string; schema: string; poolSize?: number; pipeline?: boolean },
  rest: KitRest,
  collection: string,
): Promise<TodoApp<pg.PoolClient>> {
  const { schema } = options;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 10,
    pipeline: options.pipeline ?? false,
  });
  pool.on('error', () => {});
  const todos = `"${schema}".todos`;
  const history = `"${schema}".todo_history`;
  const ledger = await postgresLedger(pool, { schema });
  await pool.query(`
    CREATE TABLE IF NOT EXISTS ${todos} (principal text NOT NULL, id text NOT NULL,
      revision integer NOT NULL, title text NOT NULL, done boolean NOT NULL,
      deleted boolean NOT NULL DEFAULT false, updated_at bigint NOT NULL, PRIMARY KEY (principal, id));
    CREATE TABLE IF NOT EXISTS ${history} (principal text NOT NULL, id text NOT NULL,
      revision integer NOT NULL, title text NOT NULL, done boolean NOT NULL, superseded_by text,
      superseded_at bigint NOT NULL, PRIMARY KEY (principal, id, revision));`);
  const sql: TodoSql<pg.PoolClient> = {
    async insert(tx, principal, todo, now) {
      await tx.query(
        `INSERT INTO ${todos} (principal, id, revision, title, done, updated_at) VALUES ($1, $2, $3, $4, $5, $6)`,
        [principal, todo.id, todo.revision, todo.title, todo.done, now],
      );
    },
    async get(tx, principal, id) {
      const result = await tx.query(
        `SELECT id, revision, title, done, deleted FROM ${todos} WHERE principal = $1 AND id = $2 FOR UPDATE`,
        [principal, id],
      );
      return result.rows[0];
    },
    async update(tx, principal, todo, deleted, now) {
      await tx.query(
        `UPDATE ${todos} SET revision = $1, title = $2, done = $3, deleted = $4, updated_at = $5 WHERE principal = $6 AND id = $7`,
        [todo.revision, todo.title, todo.done, deleted, now, principal, todo.id],
      );
    },
    async keepVersion(tx, principal, old, key, now) {
      await tx.query(
        `INSERT INTO ${history} (principal, id, revision, title, done, superseded_by, superseded_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [principal, old.id, old.revision, old.title, old.done, key, now],
      );
    },
  };
  const kit = build(ledger, rest, sql, collection);
  return {
    kit,
    kitWith: (other) => build(other, rest, sql, collection),
    database: pool,
    async countTodos(principal) {
      const result = await pool.query(
        `SELECT count(*)::int AS n FROM ${todos} WHERE principal = $1`,
        [principal],
      );
      return result.rows[0].n;
    },
    async countLedger(principal) {
      const result = await pool.query(
        `SELECT count(*)::int AS n FROM "${schema}".idempotency_ledger WHERE principal = $1`,
        [principal],
      );
      return result.rows[0].n;
    },
    async list(principal) {
      const result = await pool.query(
        `SELECT id, revision, title, done FROM ${todos} WHERE principal = $1 AND NOT deleted ORDER BY updated_at, id`,
        [principal],
      );
      return result.rows.map(todoJson);
    },
    async read(principal, id) {
      const result = await pool.query(
        `SELECT id, revision, title, done FROM ${todos} WHERE principal = $1 AND id = $2 AND NOT deleted`,
        [principal, id],
      );
      return result.rows[0] && todoJson(result.rows[0]);
    },
    async version(principal, id, revision) {
      const result = await pool.query(
        `SELECT id, revision, title, done FROM ${history} WHERE principal = $1 AND id = $2 AND revision = $3`,
        [principal, id, revision],
      );
      return result.rows[0] && todoJson(result.rows[0]);
    },
    async close() {
      await pool.end();
    },
  };
}
