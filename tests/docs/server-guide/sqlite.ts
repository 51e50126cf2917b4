import {
  createOutboxKit,
  invalid,
  json,
  openSqliteDatabase,
  sqliteLedger,
  valid,
} from 'sw-outbox-server/kit';
import { sessions } from './sessions.ts';

const db = openSqliteDatabase('app.db'); // WAL, synchronous=FULL, busy_timeout 5 s
db.exec('CREATE TABLE IF NOT EXISTS likes (owner TEXT NOT NULL, post TEXT NOT NULL)');
const like = db.prepare('INSERT INTO likes (owner, post) VALUES (?, ?)');

export const kit = createOutboxKit({
  ledger: sqliteLedger(db), // the ledger table in the same file as yours
  authenticate: async (request) => (await sessions.verify(request))?.userId ?? null,
}).route({
  method: 'POST',
  path: '/api/likes',
  validate: ({ body }) => {
    const post = (body as { post?: unknown } | null)?.post;
    return typeof post === 'string' ? valid({ post }) : invalid('which post?');
  },
  // Synchronous, like better-sqlite3, inside BEGIN IMMEDIATE with the key's claim: `tx` is `db`
  // itself (one connection), so statements prepared on `db` run in the kit's transaction.
  handle({ principal, value }) {
    like.run(principal, value.post);
    return json(201, { post: value.post, liked: true });
  },
});
