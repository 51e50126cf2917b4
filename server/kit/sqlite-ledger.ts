import Database from 'better-sqlite3';
import type { Answer } from '../problem.ts';
import { type StoredResponse, StoreUnavailableError } from '../store/port.ts';
import type { SqliteDurability } from '../store/sqlite.ts';
import {
  isStoredStatus,
  type LedgerClaim,
  type LedgerStore,
  storedResponseOf,
  type TransactOutcome,
} from './ledger.ts';

/**
 * The ledger of the reference server's SQLite store, column for column: a rowid table that grows
 * at its end with a unique `(principal, key)` index, because keys are random.
 */
const LEDGER_SCHEMA = `
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

/** Options of {@link openSqliteDatabase}. */
export interface SqliteDatabaseOptions {
  /** Default `full` (see server/README.md "Durability"). */
  durability?: SqliteDurability;
  /** How long a writer waits for another process's lock before giving up (503). Default 5 s. */
  busyTimeoutMs?: number;
}

/**
 * Opens an app's SQLite database as the kit wants it: WAL, `synchronous` FULL unless told
 * otherwise, a busy timeout. An app that opens its own `Database` should set the same.
 */
export function openSqliteDatabase(
  path: string,
  options: SqliteDatabaseOptions = {},
): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  return db;
}

/**
 * The ledger in an app's better-sqlite3 database (SPEC §22.1), next to the app's own tables.
 * Each write is one `BEGIN IMMEDIATE` transaction: the key is claimed first (so a copy that
 * completed is answered without running the handler), the handler writes with the same
 * `Database`, and the answer is stored before `COMMIT`.
 *
 * better-sqlite3 has one connection, so one transaction at a time: transactions queue here. A
 * handler should stay synchronous (better-sqlite3 is); one that awaits holds the queue (and the
 * database's write lock) while it waits, and anything else the app runs on the same `Database`
 * meanwhile sees its uncommitted writes.
 */
export function sqliteLedger(db: Database.Database): LedgerStore<Database.Database> {
  db.exec(LEDGER_SCHEMA);
  const select = db.prepare<[string, string], StoredResponse>(
    'SELECT fingerprint, status, etag, body FROM idempotency_ledger WHERE principal = ? AND key = ? AND status > 0',
  );
  const selectMany = db.prepare<[string, string], StoredResponse & { key: string }>(
    'SELECT key, fingerprint, status, etag, body FROM idempotency_ledger WHERE principal = ? AND key IN (SELECT value FROM json_each(?)) AND status > 0',
  );
  // The claim: status 0 and an empty body until the answer is stored, all before COMMIT. The
  // lookups pass over status 0: a handler that awaits lets this connection's other readers see
  // its open transaction, and a claim is not an answer (the in-flight registry answers 409).
  const claim = db.prepare<[string, string, string, number]>(
    "INSERT INTO idempotency_ledger (principal, key, fingerprint, status, etag, body, created_at) VALUES (?, ?, ?, 0, NULL, '', ?)",
  );
  const complete = db.prepare<[number, string | null, string, string, string]>(
    'UPDATE idempotency_ledger SET status = ?, etag = ?, body = ? WHERE principal = ? AND key = ?',
  );
  const sweep = db.prepare<[number, number]>(
    'DELETE FROM idempotency_ledger WHERE rowid IN (SELECT rowid FROM idempotency_ledger WHERE created_at < ? LIMIT ?)',
  );

  let queue: Promise<unknown> = Promise.resolve();
  /** Runs transactions one after another on the one connection. */
  function serialised<T>(run: () => Promise<T>): Promise<T> {
    const next = queue.then(run, run);
    queue = next.catch(() => {});
    return next;
  }

  function read<T>(run: () => T): T {
    try {
      return run();
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  async function transaction(
    { principal, key, fingerprint, now }: LedgerClaim,
    work: (tx: Database.Database) => Answer | Promise<Answer>,
  ): Promise<TransactOutcome> {
    read(() => db.exec('BEGIN IMMEDIATE'));
    let open = true;
    const rollback = () => {
      if (open && db.inTransaction) db.exec('ROLLBACK');
      open = false;
    };
    try {
      const stored = select.get(principal, key);
      if (stored) {
        rollback();
        return { kind: 'completed', response: stored };
      }
      claim.run(principal, key, fingerprint, now);
      const pending = work(db);
      const answer = pending instanceof Promise ? await pending : pending;
      if (!isStoredStatus(answer.status)) {
        rollback();
        return { kind: 'refused', answer };
      }
      const response = storedResponseOf(fingerprint, answer);
      complete.run(response.status, response.etag, response.body, principal, key);
      db.exec('COMMIT');
      open = false;
      return { kind: 'applied', response };
    } catch (error) {
      rollback();
      throw unavailableOr(error);
    }
  }

  return {
    kind: 'sqlite',
    async lookup(principal, key) {
      return read(() => select.get(principal, key));
    },
    async lookupMany(principal, keys) {
      const rows = read(() => selectMany.all(principal, JSON.stringify(keys)));
      return new Map(rows.map(({ key, ...response }) => [key, response]));
    },
    transact: (claimed, work) => serialised(() => transaction(claimed, work)),
    async sweepExpired(cutoff, batchSize) {
      return serialised(async () => read(() => sweep.run(cutoff, batchSize).changes));
    },
  };
}

/** SQLite's busy and locked errors are transient (503); anything else is the app's error. */
function unavailableOr(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN)/.test(code)) {
    return new StoreUnavailableError('SQLite is busy or unavailable', { cause: error });
  }
  return error;
}
