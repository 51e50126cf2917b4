import pg from 'pg';
import {
  createOutboxKit,
  invalid,
  json,
  notFound,
  postgresLedger,
  revisionConflict,
  valid,
} from 'sw-outbox-server/kit';
import { sessions } from './sessions.ts';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });

export const kit = createOutboxKit({
  // The ledger is a table in your database (schema `sw_outbox`), next to your own tables.
  ledger: await postgresLedger(pool, { schema: 'sw_outbox' }),
  // Runs before the ledger is read: the principal whose keys these are, or null for 401.
  authenticate: async (request) => (await sessions.verify(request))?.userId ?? null,
});

/** `{ "title": "…" }`, 1 to 200 characters; anything else is 422 before any transaction. */
const readTitle = (body: unknown) => {
  const title = (body as { title?: unknown } | null)?.title;
  return typeof title === 'string' && title.length > 0 && title.length <= 200
    ? valid({ title })
    : invalid('the todo is not valid', [{ path: 'title', message: '1 to 200 characters' }]);
};

kit.route({
  method: 'POST',
  path: '/api/todos',
  validate: ({ body }) => readTitle(body),
  async handle({ tx, principal, value }) {
    // `tx` is a pg client inside the transaction that also claims this request's key.
    const { rows } = await tx.query<{ id: string }>(
      'INSERT INTO todos (owner, title, revision) VALUES ($1, $2, 1) RETURNING id',
      [principal, value.title],
    );
    return json(201, { id: rows[0]!.id, revision: 1, title: value.title }, { etag: 1 });
  },
});

kit.route({
  method: 'PATCH',
  path: '/api/todos/:id',
  ifMatch: true, // `If-Match: "<revision>"` is required: 428 without it, 400 malformed
  validate: ({ body }) => readTitle(body),
  async handle({ tx, principal, params, value, ifMatch }) {
    const { rows } = await tx.query<{ revision: number }>(
      'SELECT revision FROM todos WHERE owner = $1 AND id = $2 FOR UPDATE',
      [principal, params.id],
    );
    if (!rows[0]) return notFound();
    if (rows[0].revision !== ifMatch) {
      return revisionConflict({ currentRevision: rows[0].revision });
    }
    const revision = rows[0].revision + 1;
    await tx.query('UPDATE todos SET title = $3, revision = $4 WHERE owner = $1 AND id = $2', [
      principal,
      params.id,
      value.title,
      revision,
    ]);
    return json(200, { id: params.id, revision, title: value.title }, { etag: revision });
  },
});
