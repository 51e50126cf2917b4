import { createServer } from 'node:http';
import express, { type ErrorRequestHandler, type Response } from 'express';
import pg from 'pg';
import {
  type Answer,
  createOutboxKit,
  notFound,
  postgresLedger,
  problem,
  recordVersion,
  startSweeper,
} from 'sw-outbox-server/kit';
import { outboxKitRouter } from 'sw-outbox-server/kit/express';
import { migrate, type Todo, todoRoutes } from './todos.ts';

// A todo API on Express 5 and PostgreSQL whose writes are exactly-once: run as many processes as
// you like on one database, they share one idempotency ledger.
const schema = process.env.PG_SCHEMA ?? 'todo_example';
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
});
const ledger = await postgresLedger(pool, { schema });
await migrate(pool, schema);

/** Demo auth: `Authorization: Bearer <user>`. Put your sessions or JWT check here. */
function userOf(header: string | null | undefined): string | null {
  return /^Bearer ([A-Za-z0-9_.@-]{1,64})$/.exec(header ?? '')?.[1] ?? null;
}

const kit = createOutboxKit({
  ledger,
  authenticate: (request) => userOf(request.headers.get('authorization')),
});
todoRoutes(kit, schema, process.env.FAIL_TITLE);

// The ledger keeps answers for its retention (7 days); the history of the same age goes with it.
startSweeper({
  retentionMs: kit.retentionSeconds * 1000,
  store: {
    async sweepExpired(cutoff, batchSize) {
      const history = await pool.query(
        `DELETE FROM "${schema}".todo_history WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM "${schema}".todo_history WHERE superseded_at < $1 LIMIT $2))`,
        [cutoff, batchSize],
      );
      return (await kit.ledger.sweepExpired(cutoff, batchSize)) + (history.rowCount ?? 0);
    },
  },
});

const send = (response: Response, answer: Answer) =>
  response.status(answer.status).set(answer.headers).send(answer.body);

const app = express();
app.disable('x-powered-by');
// The kit first: it reads the bodies of its own writes itself, after check 1.
app.use(outboxKitRouter(kit));

// The app's reads are its own routes, with the same auth.
const reads = express.Router();
reads.use((request, response, next) => {
  const user = userOf(request.headers.authorization);
  if (!user) {
    send(response, problem(401, 'auth-required', {}, { 'www-authenticate': 'Bearer' }));
    return;
  }
  response.locals.user = user;
  next();
});
// No text column of PostgreSQL stores a NUL: refuse it before a query would fail with a 500,
// as the kit does for its own routes.
for (const name of ['id', 'revision']) {
  reads.param(name, (_request, response, next, value: string) => {
    if (!value.includes('\0')) return next();
    send(
      response,
      problem(400, 'bad-request', { detail: 'a path segment may not contain NUL (%00)' }),
    );
  });
}
reads.get('/api/todos', async (_request, response) => {
  const { rows } = await pool.query<Todo>(
    `SELECT id, revision, title, done FROM "${schema}".todos
     WHERE owner = $1 AND NOT deleted ORDER BY created_at, id`,
    [response.locals.user],
  );
  response.json(rows);
});
reads.get('/api/todos/:id', async (request, response) => {
  const { rows } = await pool.query<Todo>(
    `SELECT id, revision, title, done FROM "${schema}".todos WHERE owner = $1 AND id = $2 AND NOT deleted`,
    [response.locals.user, request.params.id],
  );
  if (rows[0]) response.set('etag', `"${rows[0].revision}"`).json(rows[0]);
  else send(response, notFound());
});
/** The revisions an `integer` column holds: a larger one would fail the query with a 500. */
const MAX_REVISION = 2_147_483_647;
// A version a write replaced (SPEC §10.1): where a 412's `history.href` points.
reads.get('/api/todos/:id/history/:revision', async (request, response) => {
  const revision = Number(request.params.revision);
  const held = Number.isInteger(revision) && revision >= 0 && revision <= MAX_REVISION;
  const { rows } = await pool.query<
    Todo & { supersededBy: string | null; supersededAt: string | null }
  >(
    `SELECT id, revision, title, done, superseded_by AS "supersededBy", superseded_at AS "supersededAt"
       FROM "${schema}".todo_history WHERE owner = $1 AND id = $2 AND revision = $3
     UNION ALL
     SELECT id, revision, title, done, NULL, NULL FROM "${schema}".todos
       WHERE owner = $1 AND id = $2 AND revision = $3 AND NOT deleted`,
    [response.locals.user, request.params.id, held ? revision : -1],
  );
  const version = rows[0];
  if (!version) return void send(response, notFound('no such version'));
  const { id, title, done, supersededBy, supersededAt } = version;
  send(
    response,
    recordVersion({
      id,
      revision,
      value: { title, done },
      supersededBy,
      supersededAt: supersededAt === null ? null : Number(supersededAt),
    }),
  );
});
app.use(reads);

// Everything else, and every error, is a problem answer: never a stack trace.
app.use((_request, response) => send(response, notFound('no such route')));
const onError: ErrorRequestHandler = (error, _request, response, _next) => {
  const status = (error as { status?: number }).status;
  if (status !== undefined && status >= 400 && status < 500) {
    send(response, problem(400, 'bad-request'));
    return;
  }
  console.error(error);
  send(response, problem(500, 'internal-error'));
};
app.use(onError);

// Slow or stalled clients are cut off (408) instead of holding a connection for ever.
const requestTimeout = Number(process.env.REQUEST_TIMEOUT_MS ?? 30_000);
const server = createServer(
  {
    requestTimeout,
    headersTimeout: Math.min(10_000, requestTimeout),
    connectionsCheckingInterval: 500,
  },
  app,
);
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  console.log(`listening on http://127.0.0.1:${port}`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
});
