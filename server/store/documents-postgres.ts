import type pg from 'pg';
import {
  appliedDocument,
  type DocumentCommand,
  type DocumentRow,
  type DocumentStore,
  type DocumentWriteResult,
  deletedDocumentJson,
  documentJson,
  mergePatch,
  toDocument,
} from './documents.ts';

/** The collections' table on PostgreSQL (see documents.ts); `value` is text, kept byte for byte. */
export function postgresDocumentsSchema(schema: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS "${schema}".documents (
        principal text NOT NULL,
        collection text NOT NULL,
        id text NOT NULL,
        revision integer NOT NULL,
        value text NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (principal, collection, id))`,
  ];
}

/**
 * The collections on PostgreSQL: each write on the ledger's transaction client, the record read
 * `FOR UPDATE` so a racing write of it waits, then compared, merged and written. `query` is the
 * store's (named statements, its errors).
 */
export function postgresDocuments(
  schema: string,
  query: <R extends pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ) => Promise<pg.QueryResult<R>>,
): DocumentStore<pg.PoolClient> {
  const table = `"${schema}".documents`;
  const sql = {
    select: `SELECT id, revision, value, deleted FROM ${table} WHERE principal = $1 AND collection = $2 AND id = $3`,
    lock: `SELECT id, revision, value, deleted FROM ${table} WHERE principal = $1 AND collection = $2 AND id = $3 FOR UPDATE`,
    insert: `INSERT INTO ${table} (principal, collection, id, revision, value, deleted, created_at, updated_at)
      VALUES ($1, $2, $3, 1, $4, false, $5, $5)`,
    update: `UPDATE ${table} SET revision = $4, value = $5, deleted = $6, updated_at = $7
      WHERE principal = $1 AND collection = $2 AND id = $3`,
    list: `SELECT id, revision, value, deleted FROM ${table}
      WHERE principal = $1 AND collection = $2 AND NOT deleted ORDER BY created_at, id LIMIT $3`,
  };
  const named = (name: string) => `${schema}:documents-${name}`;

  async function apply(tx: pg.PoolClient, command: DocumentCommand): Promise<DocumentWriteResult> {
    const run = (name: keyof typeof sql, values: unknown[]) =>
      tx.query<DocumentRow>({ name: named(name), text: sql[name], values });
    const { principal, collection, id, now } = command;
    if (command.op === 'create') {
      await run('insert', [principal, collection, id, JSON.stringify(command.value), now]);
      const body = documentJson({ id, revision: 1, value: command.value });
      return appliedDocument(command, 201, body, 1);
    }
    const row = (await run('lock', [principal, collection, id])).rows[0];
    if (!row || row.deleted) return { kind: 'not-found' };
    const current = toDocument(row);
    if (row.revision !== command.ifMatch) return { kind: 'conflict', current };
    const revision = row.revision + 1;
    if (command.op === 'delete') {
      await run('update', [principal, collection, id, revision, row.value, true, now]);
      return appliedDocument(command, 200, deletedDocumentJson(id, revision), revision);
    }
    const value = mergePatch(current.value, command.patch);
    await run('update', [principal, collection, id, revision, JSON.stringify(value), false, now]);
    return appliedDocument(command, 200, documentJson({ id, revision, value }), revision);
  }

  return {
    apply,
    async get(principal, collection, id) {
      const row = (
        await query<DocumentRow>('documents-select', sql.select, [principal, collection, id])
      ).rows[0];
      return row && !row.deleted ? toDocument(row) : undefined;
    },
    async list(principal, collection, limit) {
      const result = await query<DocumentRow>('documents-list', sql.list, [
        principal,
        collection,
        limit,
      ]);
      return result.rows.map(toDocument);
    },
  };
}
