import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import {
  invalid,
  json,
  notFound,
  type OutboxKit,
  revisionConflict,
  type Validation,
  valid,
} from 'sw-outbox-server/kit';

/** A todo as the API answers it. */
export interface Todo {
  id: string;
  revision: number;
  title: string;
  done: boolean;
}

/** The fields a create or an update sends. */
interface TodoInput {
  title?: string;
  done?: boolean;
}

/** Creates the app's own tables, next to the ledger the kit keeps in the same schema. */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    // Several processes may start at once: one creates the tables, the others wait for it.
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtext('todo-example-migrate'))");
    await client.query(`
      CREATE TABLE IF NOT EXISTS "${schema}".todos (
        owner text NOT NULL, id text NOT NULL, revision integer NOT NULL, title text NOT NULL,
        done boolean NOT NULL, deleted boolean NOT NULL DEFAULT false,
        created_at bigint NOT NULL, PRIMARY KEY (owner, id));
      CREATE TABLE IF NOT EXISTS "${schema}".todo_history (
        owner text NOT NULL, id text NOT NULL, revision integer NOT NULL, title text NOT NULL,
        done boolean NOT NULL, superseded_by text NOT NULL, superseded_at bigint NOT NULL,
        PRIMARY KEY (owner, id, revision));`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

/** `{ title, done? }` for a create, `{ title?, done? }` for an update; 422 otherwise. */
export function readTodo(body: unknown, create: boolean): Validation<TodoInput> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return invalid('the body must be a JSON object');
  }
  const { title, done, ...rest } = body as Record<string, unknown>;
  const issues: Array<{ path: string; message: string }> = [];
  const storable =
    typeof title === 'string' && /^[^\0]{1,200}$/u.test(title) && title.isWellFormed();
  if (title === undefined ? create : !storable) {
    issues.push({ path: 'title', message: 'a title of 1 to 200 characters' });
  }
  if (done !== undefined && typeof done !== 'boolean')
    issues.push({ path: 'done', message: 'true or false' });
  if (Object.keys(rest).length > 0) issues.push({ path: '', message: 'only title and done' });
  if (!create && title === undefined && done === undefined) {
    issues.push({ path: '', message: 'an update changes title or done' });
  }
  if (issues.length > 0) return invalid('the todo is not valid', issues);
  return valid({ title: title as string | undefined, done: done as boolean | undefined });
}

/**
 * The todo API's writes, each run by the kit inside the transaction that claims its
 * idempotency key: `tx` is a `pg` client in that transaction, so the todo and the ledger entry
 * commit together or not at all.
 */
export function todoRoutes(kit: OutboxKit<pg.PoolClient>, schema: string, failTitle?: string) {
  const todos = `"${schema}".todos`;
  const history = `"${schema}".todo_history`;
  const historyHref = (id: string, revision: number) =>
    `/api/todos/${encodeURIComponent(id)}/history/${revision}`;

  /** The todo at `ifMatch`, locked; or the answer when it is gone or has moved on. */
  async function current(tx: pg.PoolClient, owner: string, id: string, ifMatch?: number) {
    const { rows } = await tx.query<Todo & { deleted: boolean }>(
      `SELECT id, revision, title, done, deleted FROM ${todos} WHERE owner = $1 AND id = $2 FOR UPDATE`,
      [owner, id],
    );
    const todo = rows[0];
    if (!todo || todo.deleted) return notFound();
    if (todo.revision !== ifMatch) {
      return revisionConflict({
        currentRevision: todo.revision,
        historyHref: historyHref(id, todo.revision),
      });
    }
    return todo;
  }

  /** Keeps the version a write replaces (SPEC §10.1), in the write's own transaction. */
  async function keep(tx: pg.PoolClient, owner: string, old: Todo, key: string, now: number) {
    await tx.query(
      `INSERT INTO ${history} (owner, id, revision, title, done, superseded_by, superseded_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [owner, old.id, old.revision, old.title, old.done, key, now],
    );
  }

  kit.route({
    method: 'POST',
    path: '/api/todos',
    validate: ({ body }) => readTodo(body, true),
    async handle({ tx, principal, value, now }) {
      const todo: Todo = {
        id: `todo-${randomUUID()}`,
        revision: 1,
        title: value.title!,
        done: value.done ?? false,
      };
      await tx.query(
        `INSERT INTO ${todos} (owner, id, revision, title, done, created_at) VALUES ($1, $2, 1, $3, $4, $5)`,
        [principal, todo.id, todo.title, todo.done, now],
      );
      // A crash after the write, for the verifier's "no cached 5xx" check: it rolls back.
      if (todo.title === failTitle) throw new Error('the create failed after its insert');
      return json(201, todo, { etag: todo.revision });
    },
  });

  kit.route({
    method: 'PATCH',
    path: '/api/todos/:id',
    ifMatch: true,
    validate: ({ body }) => readTodo(body, false),
    async handle({ tx, principal, params, value, ifMatch, key, now }) {
      const old = await current(tx, principal, params.id!, ifMatch);
      if ('status' in old) return old;
      const todo: Todo = {
        id: old.id,
        revision: old.revision + 1,
        title: value.title ?? old.title,
        done: value.done ?? old.done,
      };
      await keep(tx, principal, old, key, now);
      await tx.query(
        `UPDATE ${todos} SET revision = $3, title = $4, done = $5 WHERE owner = $1 AND id = $2`,
        [principal, todo.id, todo.revision, todo.title, todo.done],
      );
      return json(200, todo, { etag: todo.revision });
    },
  });

  kit.route({
    method: 'DELETE',
    path: '/api/todos/:id',
    ifMatch: true,
    async handle({ tx, principal, params, ifMatch, key, now }) {
      const old = await current(tx, principal, params.id!, ifMatch);
      if ('status' in old) return old;
      await keep(tx, principal, old, key, now);
      await tx.query(
        `UPDATE ${todos} SET revision = revision + 1, deleted = true WHERE owner = $1 AND id = $2`,
        [principal, old.id],
      );
      const revision = old.revision + 1;
      return json(200, { id: old.id, revision, deleted: true }, { etag: revision });
    },
  });
}
