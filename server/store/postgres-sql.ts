import { postgresLedgerSchema } from './ledger-schema.ts';
/**
 * SQL text of the PostgreSQL adapter, qualified with the adapter's schema so that several
 * ledgers (tests, instances) can share one database.
 *
 * The write statements are single statements on purpose (SPEC §15 "inside the write transaction"):
 * an autocommit statement is one transaction, so the revision compare-and-set, the note write and
 * the ledger insert commit or vanish together, in one round trip. The key is claimed by the
 * ledger's primary key: a second copy's insert waits for the first copy's transaction and then
 * fails with `unique_violation`, which aborts its whole statement, note write included.
 *
 * Updates and deletes (and the other-device edit) keep the version they replace in
 * `note_history` (SPEC §10.1) in the same statement: `old` locks the row at the expected
 * revision and holds its fields, the update joins it, and the history insert joins both, so the
 * version is written exactly when the write is, and vanishes with it.
 */
export interface PostgresSql {
  schema: string[];
  lookup: string;
  lookupMany: string;
  create: string;
  update: string;
  remove: string;
  afterMiss: string;
  getNote: string;
  getVersion: string;
  listNotes: string;
  edit: string;
  sweep: string;
  sweepHistory: string;
  summary: string;
  summaryAll: string;
}

/** Builds the statements for one schema; `schema` must already be validated as an identifier. */
export function postgresSql(schema: string): PostgresSql {
  const notes = `"${schema}".notes`;
  const ledger = `"${schema}".idempotency_ledger`;
  const history = `"${schema}".note_history`;
  // `by`: the superseding key's parameter, or NULL; `at`: the time's parameter.
  const keepOld = (by: string, at: string) => `history AS (
        INSERT INTO ${history} (principal, id, revision, title, body, superseded_by, superseded_at)
        SELECT $1, old.id, old.revision, old.title, old.body, ${by}, ${at} FROM old CROSS JOIN note
        RETURNING 1)`;
  const receiptInsert = `INSERT INTO ${ledger} (principal, key, fingerprint, status, etag, body, created_at)`;
  return {
    schema: [
      `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
      `CREATE TABLE IF NOT EXISTS ${notes} (
        principal text NOT NULL,
        id text NOT NULL,
        revision integer NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        deleted boolean NOT NULL DEFAULT false,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        PRIMARY KEY (principal, id))`,
      ...postgresLedgerSchema(ledger),
      `CREATE TABLE IF NOT EXISTS ${history} (
        principal text NOT NULL,
        id text NOT NULL,
        revision integer NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        superseded_by text,
        superseded_at bigint NOT NULL,
        PRIMARY KEY (principal, id, revision))`,
      `CREATE INDEX IF NOT EXISTS note_history_superseded_at ON ${history} (superseded_at)`,
    ],
    lookup: `SELECT fingerprint, status, etag, body FROM ${ledger} WHERE principal = $1 AND key = $2`,
    lookupMany: `SELECT key, fingerprint, status, etag, body FROM ${ledger} WHERE principal = $1 AND key = ANY($2::text[])`,
    // $1 principal, $2 key, $3 fingerprint, $4 now, $5 id, $6 title, $7 body, $8 response body
    create: `WITH note AS (
        INSERT INTO ${notes} (principal, id, revision, title, body, deleted, created_at, updated_at)
        VALUES ($1, $5, 1, $6, $7, false, $4, $4)
        RETURNING 1)
      ${receiptInsert}
      SELECT $1, $2, $3, 201, '"1"', $8, $4 FROM note
      RETURNING status`,
    // $1 principal, $2 key, $3 fingerprint, $4 now, $5 id, $6 if-match, $7 title?, $8 body?
    // The response body is built here because a partial PATCH needs the stored fields; to_json
    // escapes strings exactly as JSON.stringify does, so both adapters send the same bytes.
    update: `WITH old AS (
        SELECT id, revision, title, body FROM ${notes}
        WHERE principal = $1 AND id = $5 AND revision = $6 AND NOT deleted
        FOR UPDATE),
      note AS (
        UPDATE ${notes} AS n
        SET revision = n.revision + 1, title = coalesce($7, n.title), body = coalesce($8, n.body), updated_at = $4
        FROM old WHERE n.principal = $1 AND n.id = old.id
        RETURNING n.id, n.revision, n.title, n.body),
      ${keepOld('$2', '$4')}
      ${receiptInsert}
      SELECT $1, $2, $3, 200, '"' || revision || '"',
        '{"id":' || to_json(id)::text || ',"revision":' || revision || ',"title":' || to_json(title)::text
          || ',"body":' || to_json(body)::text || '}',
        $4
      FROM note
      RETURNING status, etag, body`,
    // $1 principal, $2 key, $3 fingerprint, $4 now, $5 id, $6 if-match, $7 response body
    remove: `WITH old AS (
        SELECT id, revision, title, body FROM ${notes}
        WHERE principal = $1 AND id = $5 AND revision = $6 AND NOT deleted
        FOR UPDATE),
      note AS (
        UPDATE ${notes} AS n
        SET revision = n.revision + 1, deleted = true, updated_at = $4
        FROM old WHERE n.principal = $1 AND n.id = old.id
        RETURNING n.revision),
      ${keepOld('$2', '$4')}
      ${receiptInsert}
      SELECT $1, $2, $3, 200, '"' || revision || '"', $7, $4 FROM note
      RETURNING status`,
    // Why a compare-and-set matched nothing: the key completed meanwhile, or the note is
    // missing, deleted or at another revision. $1 principal, $2 key, $3 id.
    afterMiss: `SELECT l.fingerprint, l.status, l.etag, l.body AS response,
        n.id, n.revision, n.title, n.body, n.deleted
      FROM (SELECT 1) AS one
      LEFT JOIN ${ledger} l ON l.principal = $1 AND l.key = $2
      LEFT JOIN ${notes} n ON n.principal = $1 AND n.id = $3`,
    getNote: `SELECT id, revision, title, body FROM ${notes} WHERE principal = $1 AND id = $2 AND NOT deleted`,
    // bigint comes back as text from pg; the times fit a double exactly.
    getVersion: `SELECT id, revision, title, body, superseded_by AS "supersededBy",
        superseded_at::float8 AS "supersededAt"
      FROM ${history} WHERE principal = $1 AND id = $2 AND revision = $3`,
    listNotes: `SELECT id, revision, title, body FROM ${notes}
      WHERE principal = $1 AND NOT deleted ORDER BY created_at, id LIMIT $2`,
    // $1 principal, $2 id, $3 title?, $4 body?, $5 now
    edit: `WITH old AS (
        SELECT id, revision, title, body FROM ${notes}
        WHERE principal = $1 AND id = $2 AND NOT deleted
        FOR UPDATE),
      note AS (
        UPDATE ${notes} AS n
        SET revision = n.revision + 1, title = coalesce($3, n.title), body = coalesce($4, n.body), updated_at = $5
        FROM old WHERE n.principal = $1 AND n.id = old.id
        RETURNING n.id, n.revision, n.title, n.body),
      ${keepOld('NULL', '$5')}
      SELECT id, revision, title, body FROM note`,
    sweep: `DELETE FROM ${ledger} WHERE (principal, key) IN (
      SELECT principal, key FROM ${ledger} WHERE created_at < $1 LIMIT $2)`,
    sweepHistory: `DELETE FROM ${history} WHERE (principal, id, revision) IN (
      SELECT principal, id, revision FROM ${history} WHERE superseded_at < $1 LIMIT $2)`,
    summary: `SELECT
        (SELECT count(*) FROM ${notes} WHERE principal = $1 AND NOT deleted) AS notes,
        (SELECT count(*) FROM ${notes} WHERE principal = $1 AND deleted) AS deleted,
        (SELECT coalesce(sum(revision), 0) FROM ${notes} WHERE principal = $1) AS revision_sum,
        (SELECT count(*) FROM ${ledger} WHERE principal = $1) AS receipts`,
    summaryAll: `SELECT
        (SELECT count(*) FROM ${notes} WHERE NOT deleted) AS notes,
        (SELECT count(*) FROM ${notes} WHERE deleted) AS deleted,
        (SELECT coalesce(sum(revision), 0) FROM ${notes}) AS revision_sum,
        (SELECT count(*) FROM ${ledger}) AS receipts`,
  };
}
