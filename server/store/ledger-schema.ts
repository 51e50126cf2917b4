/**
 * The idempotency ledger's table (SPEC §15), said once for the reference server's stores and the
 * kit's ledgers, which share it column for column: a key per principal, its fingerprint, the
 * stored answer (status 0 while the key is claimed and in progress) and when it was claimed, for
 * the retention sweep.
 */

/**
 * SQLite: a rowid table that grows at its end with a unique `(principal, key)` index, because
 * keys are random.
 */
export const SQLITE_LEDGER_SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_ledger (
  principal TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL,
  etag TEXT,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS idempotency_ledger_key ON idempotency_ledger (principal, key);
CREATE INDEX IF NOT EXISTS idempotency_ledger_created_at ON idempotency_ledger (created_at);
`;

/** PostgreSQL: the statements that create the ledger table `ledger` (schema-qualified). */
export function postgresLedgerSchema(ledger: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${ledger} (
        principal text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        status smallint NOT NULL,
        etag text,
        body text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (principal, key))`,
    `CREATE INDEX IF NOT EXISTS idempotency_ledger_created_at ON ${ledger} (created_at)`,
  ];
}
