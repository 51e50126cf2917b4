import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type Database from 'better-sqlite3';
import { Hono } from 'hono';
import {
  type LedgerStore,
  notFound,
  type OutboxKit,
  recordVersion,
  sqliteLedger,
} from '../../server/kit/index.ts';
import type { StoredResponse } from '../../server/store/port.ts';
import { bearerUser, openTodoApp, type TodoApp } from './kit-todo-app.ts';

/**
 * Servers for the verifier's own tests (SPEC §22.1 "shown to fail on broken servers"): the todo
 * app on the kit behind Hono with its read routes, and three copies of it, each broken the way a
 * hand-written ledger breaks:
 *
 * - `claim-outside-transaction`: the write commits, then the key is claimed in a second
 *   transaction; two instances share the database (a copy on the other instance runs again).
 * - `no-check-before-body`: the body is read before the ledger is asked.
 * - `cached-500`: a failed write's 500 is stored under its key and replayed.
 */
export type Flaw = 'claim-outside-transaction' | 'no-check-before-body' | 'cached-500';

/** A server on a free port. */
export interface RunningTodoServer {
  url: string;
  app: TodoApp<unknown>;
  close(): Promise<void>;
}

/**
 * Starts the todo app behind Hono: on SQLite in memory, whole or with one flaw, or whole on the
 * PostgreSQL schema given.
 */
export async function startTodoServer(
  flaw?: Flaw,
  postgres?: { connectionString: string; schema: string },
): Promise<RunningTodoServer> {
  const app = await openTodoApp(postgres ? { kind: 'postgres', ...postgres } : { kind: 'sqlite' });
  const kits = postgres
    ? [app.kit]
    : kitsFor(app as TodoApp<Database.Database>, app.database as Database.Database, flaw);
  const hono = new Hono();
  let turn = 0;
  hono.use(async (c, next) => {
    let request = c.req.raw;
    if (flaw === 'no-check-before-body' && request.body !== null) {
      const body = await request.arrayBuffer();
      request = new Request(request.url, {
        method: request.method,
        headers: request.headers,
        body,
      });
    }
    // Requests alternate between the instances, as behind a load balancer.
    const answer = await kits[turn++ % kits.length]!.handle(request);
    if (answer) return answer;
    await next();
  });
  hono.get('/api/todos', async (c) => {
    const user = bearerUser(c.req.raw);
    if (!user) return c.json({ type: 'auth-required' }, 401);
    return c.json({ items: await app.list(user) });
  });
  hono.get('/api/todos/:id', async (c) => {
    const user = bearerUser(c.req.raw);
    const todo = user ? await app.read(user, c.req.param('id')) : undefined;
    return todo ? c.json(todo) : answerOf(notFound());
  });
  // SPEC §10.1: a superseded version, or the current one, which a 412's history names before
  // it is superseded.
  hono.get('/api/todos/:id/history/:revision', async (c) => {
    const user = bearerUser(c.req.raw);
    const id = c.req.param('id');
    const revision = Number(c.req.param('revision'));
    if (!user) return answerOf(notFound());
    const superseded = await app.version(user, id, revision);
    const current = await app.read(user, id);
    const version = superseded ?? (current?.revision === revision ? current : undefined);
    if (!version) return answerOf(notFound());
    const { title, done } = version;
    return answerOf(
      recordVersion({
        id,
        revision,
        value: { title, done },
        supersededBy: null,
        supersededAt: null,
      }),
    );
  });
  const server = await new Promise<Server>((resolve) => {
    const started = serve({ fetch: hono.fetch, port: 0, hostname: '127.0.0.1' }, () =>
      resolve(started as Server),
    );
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.close();
    },
  };
}

function answerOf(answer: { status: number; headers: Record<string, string>; body: string }) {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

function kitsFor(
  app: TodoApp<Database.Database>,
  db: Database.Database,
  flaw: Flaw | undefined,
): Array<OutboxKit<Database.Database>> {
  if (flaw === 'claim-outside-transaction') {
    const ledger = claimAfterCommit(db);
    return [app.kitWith(ledger), app.kitWith(ledger)];
  }
  if (flaw === 'cached-500') return [app.kitWith(cachingFailures(sqliteLedger(db)))];
  return [app.kit];
}

/** The flaw: the effect commits in one transaction, the key is claimed in another, later. */
function claimAfterCommit(db: Database.Database): LedgerStore<Database.Database> {
  const inner = sqliteLedger(db);
  let queue: Promise<unknown> = Promise.resolve();
  const insert = db.prepare(
    'INSERT OR IGNORE INTO idempotency_ledger (principal, key, fingerprint, status, etag, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  return {
    ...inner,
    async transact(claim, work) {
      const run = async () => {
        db.exec('BEGIN IMMEDIATE');
        try {
          const answer = await work(db, () => {});
          if (answer.status >= 300) {
            db.exec('ROLLBACK');
            return { answer };
          }
          db.exec('COMMIT');
          return { answer };
        } catch (error) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw error;
        }
      };
      const next = queue.then(run, run);
      queue = next.catch(() => {});
      const { answer } = await next;
      if (answer.status >= 300) return { kind: 'refused', answer };
      // The gap a second transaction opens: another instance's copy runs its effect here.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response: StoredResponse = {
        fingerprint: claim.fingerprint,
        status: answer.status,
        etag: answer.headers.etag ?? null,
        body: answer.body,
      };
      const { principal, key, now } = claim;
      const claimed = insert.run(
        principal,
        key,
        response.fingerprint,
        response.status,
        response.etag,
        response.body,
        now,
      );
      if (claimed.changes === 0) {
        const stored = await inner.lookup(principal, key);
        if (stored) return { kind: 'completed', response: stored };
      }
      return { kind: 'applied', response };
    },
  };
}

/** The flaw: a write that threw is remembered as a 500 under its key. */
function cachingFailures(inner: LedgerStore<Database.Database>): LedgerStore<Database.Database> {
  const failures = new Map<string, StoredResponse>();
  const id = (principal: string, key: string) => `${principal}\n${key}`;
  return {
    ...inner,
    async lookup(principal, key) {
      return failures.get(id(principal, key)) ?? inner.lookup(principal, key);
    },
    async lookupMany(principal, keys) {
      const found = await inner.lookupMany(principal, keys);
      for (const key of keys) {
        const failure = failures.get(id(principal, key));
        if (failure) found.set(key, failure);
      }
      return found;
    },
    async transact(claim, work) {
      try {
        return await inner.transact(claim, work);
      } catch {
        const response: StoredResponse = {
          fingerprint: claim.fingerprint,
          status: 500,
          etag: null,
          body: '{"type":"internal-error","title":"Internal server error","status":500}',
        };
        failures.set(id(claim.principal, claim.key), response);
        return { kind: 'applied', response };
      }
    },
  };
}
