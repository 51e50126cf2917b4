import Database from 'better-sqlite3';
import { SQLITE_LEDGER_SCHEMA } from '../store/ledger-schema.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import {
  isStoredStatus,
  type LedgerClaim,
  type LedgerStore,
  type LedgerWork,
  type StoredResponse,
  storedResponseOf,
  type TransactOutcome,
} from './ledger.ts';

/** `synchronous` in WAL mode; see server/README.md for why FULL is the default. */
export type SqliteDurability = 'normal' | 'full';

/** Writes in one transaction at most, as the reference server's group commit. */
const MAX_GROUP = 256;

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
 * Each write is its own savepoint in a `BEGIN IMMEDIATE` transaction: the key is claimed first
 * (so a copy that completed is answered without running the handler), the handler writes with
 * the same `Database`, and the answer is stored before the savepoint is released; a refusal or a
 * throw rolls back to the savepoint, the handler's writes and the claim with it.
 *
 * Writes submitted in one turn of the event loop share that transaction (group commit): one
 * WAL append and, with `synchronous=FULL`, one fsync serve the group, and no write's answer is
 * given before its COMMIT — if the COMMIT fails, every write of the group fails (503) and nothing of it stays.
 *
 * better-sqlite3 has one connection, so one transaction at a time: groups queue here. A handler
 * should stay synchronous (better-sqlite3 is); one that awaits holds the queue (and the
 * database's write lock) while it waits, and anything else the app runs on the same `Database`
 * meanwhile sees its uncommitted writes.
 */
export function sqliteLedger(db: Database.Database): LedgerStore<Database.Database> {
  db.exec(SQLITE_LEDGER_SCHEMA);
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

  const control = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT kit_write'),
    release: db.prepare('RELEASE kit_write'),
    rollbackTo: db.prepare('ROLLBACK TO kit_write'),
  };

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

  /** One write inside its savepoint: the claim, the handler, the stored answer. */
  async function write(
    { principal, key, fingerprint, now }: LedgerClaim,
    work: LedgerWork<Database.Database>,
  ): Promise<TransactOutcome> {
    const stored = select.get(principal, key);
    if (stored) return { kind: 'completed', response: stored };
    claim.run(principal, key, fingerprint, now);
    const deferred: Array<PromiseLike<unknown>> = [];
    const pending = work(db, (statement) => {
      deferred.push(statement);
    });
    const answer = pending instanceof Promise ? await pending : pending;
    if (deferred.length > 0) await Promise.all(deferred);
    if (!isStoredStatus(answer.status)) return { kind: 'refused', answer };
    const response = storedResponseOf(fingerprint, answer);
    complete.run(response.status, response.etag, response.body, principal, key);
    return { kind: 'applied', response };
  }

  interface Job {
    claim: LedgerClaim;
    work: LedgerWork<Database.Database>;
    resolve(outcome: TransactOutcome): void;
    reject(error: unknown): void;
  }

  /** Runs a group in one transaction, a savepoint per write; answers after the COMMIT. */
  async function runGroup(group: Job[]): Promise<void> {
    try {
      control.begin.run();
    } catch (error) {
      for (const job of group) job.reject(unavailableOr(error));
      return;
    }
    const results: Array<{ ok: true; outcome: TransactOutcome } | { ok: false; error: unknown }> =
      [];
    try {
      for (const job of group) {
        control.savepoint.run();
        try {
          const outcome = await write(job.claim, job.work);
          // Only an applied write keeps what it did; a replay or a refusal leaves nothing.
          if (outcome.kind !== 'applied') control.rollbackTo.run();
          control.release.run();
          results.push({ ok: true, outcome });
        } catch (error) {
          control.rollbackTo.run();
          control.release.run();
          results.push({ ok: false, error: unavailableOr(error) });
        }
      }
      control.commit.run();
    } catch (error) {
      // A control statement or the COMMIT failed: nothing of the group is kept.
      try {
        if (db.inTransaction) control.rollback.run();
      } catch {
        // The transaction is gone either way.
      }
      for (const job of group) job.reject(unavailableOr(error));
      return;
    }
    group.forEach((job, index) => {
      const result = results[index]!;
      if (result.ok) job.resolve(result.outcome);
      else job.reject(result.error);
    });
  }

  let gathering: Job[] | undefined;
  /** Queues a write for the group of this turn of the event loop. */
  function transact(
    claimed: LedgerClaim,
    work: LedgerWork<Database.Database>,
  ): Promise<TransactOutcome> {
    return new Promise((resolve, reject) => {
      if (!gathering || gathering.length >= MAX_GROUP) {
        const group: Job[] = [];
        gathering = group;
        // setImmediate runs after the poll phase: every request read in this turn joins.
        setImmediate(() => {
          if (gathering === group) gathering = undefined;
          void serialised(() => runGroup(group));
        });
      }
      gathering.push({ claim: claimed, work, resolve, reject });
    });
  }

  return {
    kind: 'sqlite',
    ordered: true,
    async lookup(principal, key) {
      return read(() => select.get(principal, key));
    },
    async lookupMany(principal, keys) {
      const rows = read(() => selectMany.all(principal, JSON.stringify(keys)));
      return new Map(rows.map(({ key, ...response }) => [key, response]));
    },
    transact,
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
