import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';
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

/** A row of `todos`: SQLite has no booleans. */
interface TodoRow {
  id: string;
  revision: number;
  title: string;
  done: number;
  deleted: number;
}

/** The app's own tables, in the same database file as the kit's ledger. */
export function migrate(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS todos (owner TEXT NOT NULL, id TEXT NOT NULL,
      revision INTEGER NOT NULL, title TEXT NOT NULL, done INTEGER NOT NULL,
      deleted INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (owner, id));
    CREATE TABLE IF NOT EXISTS todo_history (owner TEXT NOT NULL, id TEXT NOT NULL,
      revision INTEGER NOT NULL, title TEXT NOT NULL, done INTEGER NOT NULL,
      superseded_by TEXT NOT NULL, superseded_at INTEGER NOT NULL,
      PRIMARY KEY (owner, id, revision));`);
}

/** A row as the API answers it. */
export const todoOf = (row: Omit<TodoRow, 'deleted'>): Todo => ({
  id: row.id,
  revision: row.revision,
  title: row.title,
  done: row.done === 1,
});

/** `{ title, done? }` for a create, `{ title?, done? }` for an update; 422 otherwise. */
export function readTodo(
  body: unknown,
  create: boolean,
): Validation<{ title?: string; done?: boolean }> {
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
  if (done !== undefined && typeof done !== 'boolean') {
    issues.push({ path: 'done', message: 'true or false' });
  }
  if (Object.keys(rest).length > 0) issues.push({ path: '', message: 'only title and done' });
  if (!create && title === undefined && done === undefined) {
    issues.push({ path: '', message: 'an update changes title or done' });
  }
  if (issues.length > 0) return invalid('the todo is not valid', issues);
  return valid({ title: title as string | undefined, done: done as boolean | undefined });
}

/**
 * The todo API's writes, each run by the kit inside the `BEGIN IMMEDIATE` transaction that
 * claims its idempotency key: `tx` is the better-sqlite3 `Database` in that transaction, so the
 * todo and the ledger entry commit together or not at all. The handlers stay synchronous, as
 * better-sqlite3 is: the one connection runs one transaction at a time.
 */
export function todoRoutes(
  kit: OutboxKit<Database.Database>,
  db: Database.Database,
  failTitle?: string,
) {
  const select = db.prepare<[string, string], TodoRow>(
    'SELECT id, revision, title, done, deleted FROM todos WHERE owner = ? AND id = ?',
  );
  const insert = db.prepare(
    'INSERT INTO todos (owner, id, revision, title, done) VALUES (?, ?, 1, ?, ?)',
  );
  const update = db.prepare(
    'UPDATE todos SET revision = ?, title = ?, done = ?, deleted = ? WHERE owner = ? AND id = ?',
  );
  const keep = db.prepare(
    'INSERT INTO todo_history (owner, id, revision, title, done, superseded_by, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );

  /** The todo at `ifMatch`; or the answer when it is gone or has moved on. */
  function current(owner: string, id: string, ifMatch?: number) {
    const row = select.get(owner, id);
    if (!row || row.deleted) return notFound();
    if (row.revision !== ifMatch) {
      return revisionConflict({
        currentRevision: row.revision,
        historyHref: `/api/todos/${encodeURIComponent(id)}/history/${row.revision}`,
      });
    }
    return row;
  }

  kit.route({
    method: 'POST',
    path: '/api/todos',
    validate: ({ body }) => readTodo(body, true),
    handle({ principal, value }) {
      const todo: Todo = {
        id: `todo-${randomUUID()}`,
        revision: 1,
        title: value.title!,
        done: value.done ?? false,
      };
      insert.run(principal, todo.id, todo.title, todo.done ? 1 : 0);
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
    handle({ principal, params, value, ifMatch, key, now }) {
      const old = current(principal, params.id!, ifMatch);
      if ('status' in old) return old;
      const todo: Todo = {
        id: old.id,
        revision: old.revision + 1,
        title: value.title ?? old.title,
        done: value.done ?? old.done === 1,
      };
      keep.run(principal, old.id, old.revision, old.title, old.done, key, now);
      update.run(todo.revision, todo.title, todo.done ? 1 : 0, 0, principal, todo.id);
      return json(200, todo, { etag: todo.revision });
    },
  });

  kit.route({
    method: 'DELETE',
    path: '/api/todos/:id',
    ifMatch: true,
    handle({ principal, params, ifMatch, key, now }) {
      const old = current(principal, params.id!, ifMatch);
      if ('status' in old) return old;
      const revision = old.revision + 1;
      keep.run(principal, old.id, old.revision, old.title, old.done, key, now);
      update.run(revision, old.title, old.done, 1, principal, old.id);
      return json(200, { id: old.id, revision, deleted: true }, { etag: revision });
    },
  });
}
