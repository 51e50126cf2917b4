import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import {
  type Answer,
  createOutboxKit,
  notFound,
  openSqliteDatabase,
  problem,
  recordVersion,
  sqliteLedger,
  startSweeper,
} from 'sw-outbox-server/kit';
import { outboxKitMiddleware } from 'sw-outbox-server/kit/hono';
import { migrate, todoOf, todoRoutes } from './todos.ts';

// A todo API on Hono and SQLite whose writes are exactly-once. The same Hono app runs on Bun,
// Deno and Workers (`export default app`); here it is served by Node.
const db = openSqliteDatabase(process.env.DB_PATH ?? 'todos.db'); // WAL, synchronous=FULL
const ledger = sqliteLedger(db);
migrate(db);

/** Demo auth: `Authorization: Bearer <user>`. Put your sessions or JWT check here. */
function userOf(header: string | null | undefined): string | null {
  return /^Bearer ([A-Za-z0-9_.@-]{1,64})$/.exec(header ?? '')?.[1] ?? null;
}

const kit = createOutboxKit({
  ledger,
  authenticate: (request) => userOf(request.headers.get('authorization')),
});
todoRoutes(kit, db, process.env.FAIL_TITLE);

// The ledger keeps answers for its retention (7 days); the history of the same age goes with it.
const sweepHistory = db.prepare(
  'DELETE FROM todo_history WHERE rowid IN (SELECT rowid FROM todo_history WHERE superseded_at < ? LIMIT ?)',
);
startSweeper({
  retentionMs: kit.retentionSeconds * 1000,
  store: {
    async sweepExpired(cutoff, batchSize) {
      const swept = await kit.ledger.sweepExpired(cutoff, batchSize);
      return swept + sweepHistory.run(cutoff, batchSize).changes;
    },
  },
});

const answer = ({ status, headers, body }: Answer) => new Response(body, { status, headers });

type Env = { Variables: { user: string } };
const app = new Hono<Env>();
// The kit first: it reads the bodies of its own writes itself, after check 1.
app.use(outboxKitMiddleware(kit));

// The app's reads are its own routes, with the same auth.
app.use('/api/*', async (c, next) => {
  const user = userOf(c.req.header('authorization'));
  if (!user) return answer(problem(401, 'auth-required', {}, { 'www-authenticate': 'Bearer' }));
  c.set('user', user);
  await next();
});
const list = db.prepare<[string], Parameters<typeof todoOf>[0]>(
  'SELECT id, revision, title, done FROM todos WHERE owner = ? AND deleted = 0 ORDER BY rowid',
);
app.get('/api/todos', (c) => c.json(list.all(c.get('user')).map(todoOf)));
const one = db.prepare<[string, string], Parameters<typeof todoOf>[0]>(
  'SELECT id, revision, title, done FROM todos WHERE owner = ? AND id = ? AND deleted = 0',
);
app.get('/api/todos/:id', (c) => {
  const row = one.get(c.get('user'), c.req.param('id'));
  if (!row) return answer(notFound());
  c.header('etag', `"${row.revision}"`);
  return c.json(todoOf(row));
});
// A version a write replaced (SPEC §10.1): where a 412's `history.href` points.
const version = db.prepare<
  [{ owner: string; id: string; revision: number }],
  Parameters<typeof todoOf>[0] & { supersededBy: string | null; supersededAt: number | null }
>(
  `SELECT id, revision, title, done, superseded_by AS supersededBy, superseded_at AS supersededAt
     FROM todo_history WHERE owner = @owner AND id = @id AND revision = @revision
   UNION ALL
   SELECT id, revision, title, done, NULL, NULL FROM todos
     WHERE owner = @owner AND id = @id AND revision = @revision AND deleted = 0`,
);
app.get('/api/todos/:id/history/:revision', (c) => {
  const revision = Number(c.req.param('revision'));
  const row = version.get({ owner: c.get('user'), id: c.req.param('id'), revision });
  if (!row) return answer(notFound('no such version'));
  const { id, title, done } = todoOf(row);
  const { supersededBy, supersededAt } = row;
  return answer(
    recordVersion({ id, revision, value: { title, done }, supersededBy, supersededAt }),
  );
});

// Everything else, and every error, is a problem answer: never a stack trace.
app.notFound(() => answer(notFound('no such route')));
app.onError((error) => {
  console.error(error);
  return answer(problem(500, 'internal-error'));
});

// Slow or stalled clients are cut off (408) instead of holding a connection for ever.
const requestTimeout = Number(process.env.REQUEST_TIMEOUT_MS ?? 30_000);
const server = serve(
  {
    fetch: app.fetch,
    port: Number(process.env.PORT ?? 3000),
    hostname: '127.0.0.1',
    serverOptions: {
      requestTimeout,
      headersTimeout: Math.min(10_000, requestTimeout),
      connectionsCheckingInterval: 500,
    },
  },
  (info) => console.log(`listening on http://127.0.0.1:${info.port}`),
);
process.on('SIGTERM', () => {
  server.close();
  db.close();
  process.exit(0);
});
