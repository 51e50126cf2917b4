/**
 * SQL text of the PostgreSQL adapter, qualified with the adapter's schema so that several
 * stores (tests, instances) can share one database. The ledger's own statements are the kit's
 * (server/kit/postgres-ledger.ts); these run inside its transaction, after the key's claim.
 *
 * Updates and deletes (and the other-device edit) keep the version they replace in
 * `note_history` (SPEC §10.1) in the same statement: `old` locks the row at the expected
 * revision and holds its fields, the update joins it, and the history insert joins both, so the
 * version is written exactly when the write is, and vanishes with it. Each returns the new row,
 * from which the answer's body is made (JSON.stringify, as on SQLite: identical bytes).
 */
export interface PostgresSql {
  schema: string[];
  create: string;
  update: string;
  remove: string;
  current: string;
  getNote: string;
  getVersion: string;
  listNotes: string;
  edit: string;
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
    // $1 principal, $2 id, $3 title, $4 body, $5 now
    create: `INSERT INTO ${notes} (principal, id, revision, title, body, deleted, created_at, updated_at)
      VALUES ($1, $2, 1, $3, $4, false, $5, $5)`,
    // $1 principal, $2 id, $3 if-match, $4 key, $5 now, $6 title?, $7 body?
    update: `WITH old AS (
        SELECT id, revision, title, body FROM ${notes}
        WHERE principal = $1 AND id = $2 AND revision = $3 AND NOT deleted
        FOR UPDATE),
      note AS (
        UPDATE ${notes} AS n
        SET revision = n.revision + 1, title = coalesce($6, n.title), body = coalesce($7, n.body), updated_at = $5
        FROM old WHERE n.principal = $1 AND n.id = old.id
        RETURNING n.id, n.revision, n.title, n.body),
      ${keepOld('$4', '$5')}
      SELECT id, revision, title, body FROM note`,
    // $1 principal, $2 id, $3 if-match, $4 key, $5 now
    remove: `WITH old AS (
        SELECT id, revision, title, body FROM ${notes}
        WHERE principal = $1 AND id = $2 AND revision = $3 AND NOT deleted
        FOR UPDATE),
      note AS (
        UPDATE ${notes} AS n
        SET revision = n.revision + 1, deleted = true, updated_at = $5
        FROM old WHERE n.principal = $1 AND n.id = old.id
        RETURNING n.id, n.revision),
      ${keepOld('$4', '$5')}
      SELECT id, revision FROM note`,
    // Why a compare-and-set matched nothing: the note as it is (missing, deleted, other revision).
    current: `SELECT id, revision, title, body, deleted FROM ${notes} WHERE principal = $1 AND id = $2`,
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
