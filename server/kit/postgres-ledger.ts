import type pg from 'pg';
import type { Answer } from '../problem.ts';
import { postgresLedgerSchema } from '../store/ledger-schema.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { type PostgresBatchParts, transactTogether } from './postgres-batch.ts';
import { errorCode, isOutOfTime, isUnavailable, RETRYABLE } from '../store/postgres-errors.ts';
import {
  isStoredStatus,
  type LedgerClaim,
  type LedgerStore,
  type LedgerWork,
  type StoredResponse,
  storedResponseOf,
  type TransactOutcome,
} from './ledger.ts';

/** Options of {@link postgresLedger}. */
export interface PostgresLedgerOptions {
  /** Schema of the ledger table; created on start. Default `sw_outbox`. */
  schema?: string;
  /**
   * Attempts of a transaction that failed with a serialization failure, a deadlock or a lock
   * timeout before answering 503. Default 5.
   */
  maxAttempts?: number;
  /**
   * `lock_timeout` of each transaction, in ms (default 5000): how long a copy waits for another
   * transaction's claim of the same key (then 409 `request-in-progress`), and the app's
   * statements for their locks (then retried, then 503).
   */
  lockTimeoutMs?: number;
  /** Isolation level of each transaction. Default `read committed`. */
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialises concurrent schema creation by several instances (CREATE … IF NOT EXISTS races). */
const SCHEMA_LOCK = 0x5730_0b0d;
/** `lock_timeout` ran out. */
const LOCK_TIMEOUT = '55P03';

/**
 * The ledger in an app's PostgreSQL database (SPEC §22.1), shared by every server process that
 * uses the same database and schema: the way an app grows past one machine.
 *
 * Each write is one transaction on one pooled client: `INSERT … ON CONFLICT DO NOTHING` claims
 * the key first — a racing copy's insert waits on the first one's row lock, then finds the key
 * completed (it is answered from the ledger, the handler never runs) or, when the first rolled
 * back, claims it itself — then the handler writes with the same client, and the answer is
 * stored before `COMMIT`. A refusal or a throw rolls back, claim included. Serialization
 * failures, deadlocks and lock timeouts in the app's statements retry the whole transaction up
 * to `maxAttempts` times, then 503; the database unreachable is 503 at once.
 *
 * Round trips are what a write costs here (SPEC §19: the kit ≤ 1.3× a bare write), so the
 * ledger's own statements ride in two: `BEGIN`, the lock timeout and the claim in one simple
 * query, the stored answer and `COMMIT` in another, their values as escaped literals. On a pool
 * opened with node-postgres's pipeline mode (`new pg.Pool({ pipeline: true })`) the claim goes out
 * with the handler's first statement instead of a round trip of its own (the database runs it
 * first all the same). With check 1's lookup a create is then three round trips; four without
 * pipelining, where the ledger alone once took six.
 */
export async function postgresLedger(
  pool: pg.Pool,
  options: PostgresLedgerOptions = {},
): Promise<LedgerStore<pg.PoolClient>> {
  const schema = options.schema ?? 'sw_outbox';
  if (!SCHEMA_NAME.test(schema)) throw new TypeError(`invalid PostgreSQL schema name: ${schema}`);
  const maxAttempts = options.maxAttempts ?? 5;
  const lockTimeoutMs = Math.max(1, Math.floor(options.lockTimeoutMs ?? 5000));
  const begin = `BEGIN ISOLATION LEVEL ${(options.isolation ?? 'read committed').toUpperCase()}; SET LOCAL lock_timeout = ${lockTimeoutMs}`;
  const ledger = `"${schema}".idempotency_ledger`;
  const sql = {
    lookup: `SELECT fingerprint, status, etag, body FROM ${ledger} WHERE principal = $1 AND key = $2`,
    lookupMany: `SELECT key, fingerprint, status, etag, body FROM ${ledger} WHERE principal = $1 AND key = ANY($2::text[])`,
    // The claim: status 0 and an empty body until the answer is stored, all before COMMIT.
    claim: `INSERT INTO ${ledger} (principal, key, fingerprint, status, etag, body, created_at)
      VALUES ($1, $2, $3, 0, NULL, '', $4) ON CONFLICT DO NOTHING`,
    complete: `UPDATE ${ledger} SET status = $3, etag = $4, body = $5 WHERE principal = $1 AND key = $2`,
    claimInline: (principal: string, key: string, fingerprint: string, now: number) =>
      `INSERT INTO ${ledger} (principal, key, fingerprint, status, etag, body, created_at)
      VALUES (${principal}, ${key}, ${fingerprint}, 0, NULL, '', ${now}) ON CONFLICT DO NOTHING`,
    completeInline: (principal: string, key: string, status: number, etag: string, body: string) =>
      `UPDATE ${ledger} SET status = ${status}, etag = ${etag}, body = ${body} WHERE principal = ${principal} AND key = ${key}`,
    sweep: `DELETE FROM ${ledger} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${ledger} WHERE created_at < $1 LIMIT $2))`,
  };
  await createSchema(pool, [
    `CREATE SCHEMA IF NOT EXISTS "${schema}"`,
    ...postgresLedgerSchema(ledger),
  ]);

  async function read<R extends pg.QueryResultRow>(text: string, values: unknown[]) {
    try {
      return await pool.query<R>(text, values);
    } catch (error) {
      throw unavailableOr(error);
    }
  }

  async function lookup(principal: string, key: string): Promise<StoredResponse | undefined> {
    return (await read<StoredResponse>(sql.lookup, [principal, key])).rows[0];
  }

  /** `BEGIN`, the lock timeout and the claim: whether this transaction holds the key now. */
  async function claimKey(client: pg.PoolClient, claim: LedgerClaim): Promise<boolean> {
    const { principal, key, fingerprint, now } = claim;
    // Quotes doubled, `E'…'` with doubled backslashes when there are any.
    const literal = (value: string) => client.escapeLiteral(value);
    if (!inlinable(principal, key, fingerprint) || !Number.isSafeInteger(now)) {
      await client.query(begin);
      return (
        ((await client.query(sql.claim, [principal, key, fingerprint, now])).rowCount ?? 0) > 0
      );
    }
    const text = `${begin}; ${sql.claimInline(literal(principal), literal(key), literal(fingerprint), now)}`;
    const results = (await client.query(text)) as unknown as pg.QueryResult[];
    return (results.at(-1)?.rowCount ?? 0) > 0;
  }

  /**
   * The stored answer over this transaction's own claim, as one statement of literals;
   * `undefined` when a value cannot be one. It fails (division by zero) when no claim of
   * this transaction is there to complete.
   */
  function completeText(
    client: pg.PoolClient,
    { principal, key }: LedgerClaim,
    { status, etag, body }: StoredResponse,
  ): string | undefined {
    if (!inlinable(principal, key, body, etag ?? '') || !Number.isInteger(status)) return undefined;
    const literal = (value: string) => client.escapeLiteral(value);
    const tag = etag === null ? 'NULL' : literal(etag);
    const update = `${sql.completeInline(literal(principal), literal(key), status, tag, literal(body))} AND status = 0 RETURNING 1`;
    return `WITH done AS (${update}) SELECT 1 / count(*)::int FROM done`;
  }

  /** Stores the answer and commits, in one round trip when its values can be literals. */
  async function completeAndCommit(
    client: pg.PoolClient,
    { principal, key }: LedgerClaim,
    response: StoredResponse,
  ): Promise<void> {
    const { status, etag, body } = response;
    const literal = (value: string) => client.escapeLiteral(value);
    if (!inlinable(principal, key, body, etag ?? '') || !Number.isInteger(status)) {
      await client.query(sql.complete, [principal, key, status, etag, body]);
      await client.query('COMMIT');
      return;
    }
    const tag = etag === null ? 'NULL' : literal(etag);
    await client.query(
      `${sql.completeInline(literal(principal), literal(key), status, tag, literal(body))}; COMMIT`,
    );
  }

  /** One attempt: `undefined` when the key completed and vanished (swept) before it was read. */
  async function attempt(
    claim: LedgerClaim,
    work: LedgerWork<pg.PoolClient>,
  ): Promise<TransactOutcome | undefined> {
    const { principal, key, fingerprint } = claim;
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw new StoreUnavailableError('cannot connect to PostgreSQL', { cause: error });
    }
    let broken = false;
    const state = { claimed: false };
    const completed = async () => {
      // On this client: a storm of copies each holding a client while waiting for another
      // would empty the pool.
      await client.query('ROLLBACK');
      const stored = (await client.query<StoredResponse>(sql.lookup, [principal, key])).rows[0];
      return stored && ({ kind: 'completed', response: stored } as const);
    };
    try {
      // Pipelined, the claim (one simple query) goes out with the handler's first statement, and
      // the database still runs it first: a copy's statements wait behind its claim, and all of
      // them roll back when the claim finds the key taken.
      const pipelined =
        (client as { pipeline?: boolean }).pipeline === true &&
        inlinable(principal, key, fingerprint) &&
        Number.isSafeInteger(claim.now);
      const claiming = claimKey(client, claim);
      const deferred: Array<PromiseLike<unknown>> = [];
      const defer = (statement: PromiseLike<unknown>) => {
        // Read below; a rejection is never left unheard.
        Promise.resolve(statement).catch(() => {});
        deferred.push(statement);
      };
      let answer: Answer | undefined;
      let failure: { error: unknown } | undefined;
      if (pipelined) {
        claiming.catch(() => {});
        try {
          answer = await work(client, defer);
        } catch (error) {
          failure = { error };
        }
        if (answer && !failure && isStoredStatus(answer.status)) {
          const response = storedResponseOf(fingerprint, answer);
          const completing = completeText(client, claim, response);
          const text = completing && `${completing}; COMMIT`;
          if (text !== undefined) {
            return await commitBehind(client, claiming, deferred, text, response, {
              completed,
              state,
            });
          }
        }
      }
      const won = await claiming;
      state.claimed = true;
      if (!won) return await completed();
      if (failure) throw failure.error;
      answer ??= await work(client, defer);
      await Promise.all(deferred);
      if (!isStoredStatus(answer.status)) {
        await client.query('ROLLBACK');
        return { kind: 'refused', answer };
      }
      const response = storedResponseOf(fingerprint, answer);
      await completeAndCommit(client, claim, response);
      return { kind: 'applied', response };
    } catch (error) {
      broken = isUnavailable(error);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      if (!state.claimed && errorCode(error) === LOCK_TIMEOUT) return { kind: 'in-progress' };
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * The stored answer and `COMMIT` sent right behind the handler's statements, before the claim's
   * and the deferred statements' results are read: one round trip for the whole write when the
   * handler deferred its statements. The answer is stored only over this transaction's own claim
   * (`status = 0`): when the claim found the key taken, the statement fails on purpose and nothing
   * commits.
   */
  async function commitBehind(
    client: pg.PoolClient,
    claiming: Promise<boolean>,
    deferred: ReadonlyArray<PromiseLike<unknown>>,
    text: string,
    response: StoredResponse,
    {
      completed,
      state,
    }: { completed: () => Promise<TransactOutcome | undefined>; state: { claimed: boolean } },
  ): Promise<TransactOutcome | undefined> {
    const committing = client.query(text);
    committing.catch(() => {});
    const won = await claiming;
    state.claimed = true;
    const statements = await Promise.allSettled(deferred);
    if (!won) {
      await committing.catch(() => {});
      return completed();
    }
    const failed = statements.find((statement) => statement.status === 'rejected');
    if (failed) {
      await committing.catch(() => {});
      throw failed.reason;
    }
    await committing;
    return { kind: 'applied', response };
  }

  const batchParts: PostgresBatchParts = {
    pool,
    begin,
    lookup: sql.lookup,
    claimText(client, { principal, key, fingerprint, now }) {
      if (!inlinable(principal, key, fingerprint) || !Number.isSafeInteger(now)) return undefined;
      const literal = (value: string) => client.escapeLiteral(value);
      return sql.claimInline(literal(principal), literal(key), literal(fingerprint), now);
    },
    completeText(client, claim, response) {
      return completeText(client, claim, response);
    },
  };

  return {
    kind: 'postgres',
    lookup,
    async lookupMany(principal, keys) {
      const rows = (await read<StoredResponse & { key: string }>(sql.lookupMany, [principal, keys]))
        .rows;
      return new Map(rows.map(({ key, ...response }) => [key, response]));
    },
    transact,
    async transactMany(jobs) {
      const together = jobs.length > 1 ? await transactTogether(batchParts, jobs) : undefined;
      const results: Array<PromiseSettledResult<TransactOutcome>> = [];
      // In order: a write run alone sees the ones before it.
      for (const [index, job] of jobs.entries()) {
        const outcome = together?.[index];
        results.push(...(await Promise.allSettled([outcome ?? transact(job.claim, job.work)])));
      }
      return results;
    },
    async sweepExpired(cutoff, batchSize) {
      return (await read(sql.sweep, [cutoff, batchSize])).rowCount ?? 0;
    },
  };

  async function transact(
    claim: LedgerClaim,
    work: LedgerWork<pg.PoolClient>,
  ): Promise<TransactOutcome> {
    for (let attemptNo = 1; ; attemptNo++) {
      try {
        const outcome = await attempt(claim, work);
        if (outcome) return outcome;
      } catch (error) {
        const code = errorCode(error);
        const retryable = code !== undefined && (RETRYABLE.has(code) || code === LOCK_TIMEOUT);
        if (!retryable) throw unavailableOr(error);
        if (attemptNo >= maxAttempts) {
          throw new StoreUnavailableError('PostgreSQL kept failing to serialise the write', {
            cause: error,
          });
        }
      }
    }
  }
}

/**
 * Whether values can travel as literals in a simple query: a NUL ends the query text on the
 * wire, so a value holding one goes as a parameter instead (where PostgreSQL refuses it).
 */
function inlinable(...values: string[]): boolean {
  return values.every((value) => !value.includes('\0'));
}

/**
 * The database unreachable, or its own time limits (`statement_timeout`, a `lock_timeout` the
 * retries did not outlast), become `StoreUnavailableError` (503); anything else stays.
 */
function unavailableOr(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error;
  if (isUnavailable(error))
    return new StoreUnavailableError('PostgreSQL is unavailable', { cause: error });
  if (isOutOfTime(error))
    return new StoreUnavailableError('PostgreSQL ran out of time', { cause: error });
  return error;
}

async function createSchema(pool: pg.Pool, statements: readonly string[]): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new StoreUnavailableError('cannot connect to PostgreSQL', { cause: error });
  }
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    for (const statement of statements) await client.query(statement);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
