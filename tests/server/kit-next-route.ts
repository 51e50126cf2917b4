import { createOutboxKit, json, openSqliteDatabase, sqliteLedger } from '../../server/kit/index.ts';

/**
 * A Next.js App Router route handler (`app/api/likes/route.ts`) on the kit: Next.js hands each
 * method's function a Fetch API `Request` and sends the `Response` it returns, so the kit's
 * `fetch` is the whole integration. The test imports this module and calls `POST` and `GET` with
 * plain `Request`s, as Next.js would.
 */
const db = openSqliteDatabase(':memory:');
db.exec('CREATE TABLE likes (principal TEXT NOT NULL, post TEXT NOT NULL)');

const kit = createOutboxKit({
  ledger: sqliteLedger(db),
  authenticate: (request) => request.headers.get('x-user'),
}).route({
  method: 'POST',
  path: '/api/likes',
  handle({ tx, principal, body }) {
    const post = (body as { post: string }).post;
    tx.prepare('INSERT INTO likes (principal, post) VALUES (?, ?)').run(principal, post);
    return json(201, { post, liked: true });
  },
});

/** `POST /api/likes`: a write, exactly once per key. */
export async function POST(request: Request): Promise<Response> {
  return kit.fetch(request);
}

/** `GET /idempotency/<key>` would live in its own route file; here the test reads the table. */
export function likesOf(principal: string): number {
  const row = db.prepare('SELECT count(*) AS n FROM likes WHERE principal = ?').get(principal);
  return (row as { n: number }).n;
}
