import pg from 'pg';
import { formatRevisionTag } from 'sw-outbox/wire';
import {
  deletedJson,
  type NoteRecord,
  type NoteVersion,
  noteJson,
  type ServerStore,
  type StoredResponse,
  StoreUnavailableError,
  type WriteCommand,
  type WriteOutcome,
} from './port.ts';
import { errorCode, isOutOfTime, isUnavailable, RETRYABLE } from './postgres-errors.ts';
import { type PostgresSql, postgresSql } from './postgres-sql.ts';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  connectionString: string;
  /** Schema holding the tables; created on start. Default `sw_outbox`. */
  schema?: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /** Attempts for a statement that failed with 40001/40P01 before answering 503. Default 5. */
  maxAttempts?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialises concurrent schema creation by several instances (CREATE … IF NOT EXISTS races). */
const SCHEMA_LOCK = 0x5730_0b0c;

interface MissRow {
  fingerprint: string | null;
  status: number | null;
  etag: string | null;
  response: string | null;
  id: string | null;
  revision: number | null;
  title: string | null;
  body: string | null;
  deleted: boolean | null;
}

/**
 * The adapter for several instances sharing one ledger (SPEC §15). Every write is one autocommit
 * statement on a pooled connection (see postgres-sql.ts): one round trip on the hot path, named
 * prepared statements so the server parses each statement once per connection. The writes of a
 * batch (SPEC §15.1) share one pipelined transaction.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<ServerStore> {
  const schema = options.schema ?? 'sw_outbox';
  if (!SCHEMA_NAME.test(schema)) throw new TypeError(`invalid PostgreSQL schema name: ${schema}`);
  const sql = postgresSql(schema);
  const maxAttempts = options.maxAttempts ?? 5;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    // No idle timeout: pg-pool arms a timer on every release otherwise, twice per write here.
    idleTimeoutMillis: 0,
    // A batch sends its statements without waiting for each answer (see writeInOneTransaction);
    // one query at a time behaves as without pipelining.
    pipeline: true,
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  await createSchema(pool, sql);

  const named = (name: string) => `${schema}:${name}`;

  async function query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await pool.query<R>({ name: named(name), text, values });
      } catch (error) {
        const code = errorCode(error);
        if (code !== undefined && RETRYABLE.has(code)) {
          if (attempt < maxAttempts) continue;
          throw new StoreUnavailableError('PostgreSQL kept failing to serialise the write', {
            cause: error,
          });
        }
        if (isUnavailable(error))
          throw new StoreUnavailableError('PostgreSQL is unavailable', { cause: error });
        if (isOutOfTime(error))
          throw new StoreUnavailableError('PostgreSQL ran out of time for the write', {
            cause: error,
          });
        throw error;
      }
    }
  }

  /**
   * The write statement of a command (see postgres-sql.ts) and how to read its result: the
   * stored response, or `undefined` when the compare-and-set matched nothing.
   */
  function statementFor(command: WriteCommand): WriteStatement {
    const { principal, key, fingerprint, now } = command;
    if (command.op === 'create') {
      const note = { id: command.id, revision: 1, title: command.title, body: command.body };
      const json = noteJson(note);
      return {
        name: 'create',
        text: sql.create,
        values: [principal, key, fingerprint, now, command.id, command.title, command.body, json],
        read: () => ({ fingerprint, status: 201, etag: '"1"', body: json }),
      };
    }
    if (command.op === 'update') {
      const { title, body } = command.patch;
      return {
        name: 'update',
        text: sql.update,
        values: [
          principal,
          key,
          fingerprint,
          now,
          command.id,
          command.ifMatch,
          title ?? null,
          body ?? null,
        ],
        read: (result) => {
          const row = result.rows[0] as { status: number; etag: string; body: string } | undefined;
          return row
            ? { fingerprint, status: row.status, etag: row.etag, body: row.body }
            : undefined;
        },
      };
    }
    const revision = command.ifMatch + 1;
    const json = deletedJson(command.id, revision);
    return {
      name: 'remove',
      text: sql.remove,
      values: [principal, key, fingerprint, now, command.id, command.ifMatch, json],
      read: (result) =>
        result.rowCount === 1
          ? { fingerprint, status: 200, etag: formatRevisionTag(revision), body: json }
          : undefined,
    };
  }

  /** One attempt of the write statement; `undefined` when the compare-and-set matched nothing. */
  async function attempt(command: WriteCommand): Promise<StoredResponse | undefined> {
    const statement = statementFor(command);
    return statement.read(await query(statement.name, statement.text, statement.values));
  }

  /**
   * Why a write matched nothing or lost the key's race: the key completed meanwhile, or the note
   * is missing, deleted or at another revision. `undefined` when none of these holds any more (a
   * racing copy rolled back in between): the write may be tried again.
   */
  async function explainMiss(command: WriteCommand): Promise<WriteOutcome | undefined> {
    const miss = await query<MissRow>('miss', sql.afterMiss, missValues(command));
    return readMiss(command, miss.rows[0]);
  }

  async function write(command: WriteCommand): Promise<WriteOutcome> {
    // A miss is re-examined; the loop only repeats when a racing copy rolled back in between.
    for (let round = 1; ; round++) {
      try {
        const response = await attempt(command);
        if (response) return { kind: 'applied', response };
      } catch (error) {
        if (!(errorCode(error) === '23505' && isLedgerKey(error))) throw error;
      }
      const outcome = await explainMiss(command);
      if (outcome) return outcome;
      if (round >= maxAttempts)
        throw new StoreUnavailableError('the write kept racing another request');
    }
  }

  /**
   * The write statements of a batch in one transaction, pipelined on one connection: BEGIN, the
   * statements and COMMIT go out at once, so the batch costs one round trip and one commit
   * instead of one of each per write. Each statement is the single write's, so each write is
   * still its own key claim, compare-and-set and response store; an update or delete is followed
   * by the read that explains a miss, so a conflict reports the note as it was at that point of
   * the batch. `undefined` when a statement failed (a copy of a key committed elsewhere, a
   * deadlock, …): then the COMMIT rolled back and nothing of the batch is kept. Per write, its
   * outcome, or `undefined` for a miss nothing explains any more (try it again alone).
   */
  async function writeInOneTransaction(
    commands: readonly WriteCommand[],
  ): Promise<Array<WriteOutcome | undefined> | undefined> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw new StoreUnavailableError('PostgreSQL is unavailable', { cause: error });
    }
    let broken: Error | undefined;
    try {
      const run = (name: string, text: string, values: unknown[]) =>
        client.query({ name: named(name), text, values });
      const queries: Array<Promise<pg.QueryResult>> = [client.query('BEGIN')];
      const steps = commands.map((command) => {
        const statement = statementFor(command);
        const write = queries.push(run(statement.name, statement.text, statement.values)) - 1;
        const miss =
          command.op === 'create'
            ? undefined
            : queries.push(run('miss', sql.afterMiss, missValues(command))) - 1;
        return { command, statement, write, miss };
      });
      queries.push(client.query('COMMIT'));
      const settled = await Promise.allSettled(queries);
      const failure = settled.find((result) => result.status === 'rejected');
      if (failure) {
        if (!isUnavailable(failure.reason)) return undefined;
        broken = failure.reason as Error;
        throw new StoreUnavailableError('PostgreSQL is unavailable', { cause: failure.reason });
      }
      const results = settled.map(
        (result) => (result as PromiseFulfilledResult<pg.QueryResult>).value,
      );
      // An aborted transaction answers COMMIT with ROLLBACK.
      if (results.at(-1)!.command !== 'COMMIT') return undefined;
      return steps.map(({ command, statement, write, miss }): WriteOutcome | undefined => {
        const response = statement.read(results[write]!);
        if (response) return { kind: 'applied', response };
        return readMiss(command, results[miss!]!.rows[0] as MissRow | undefined);
      });
    } finally {
      client.release(broken);
    }
  }

  async function writeMany(
    commands: readonly WriteCommand[],
  ): Promise<Array<PromiseSettledResult<WriteOutcome>>> {
    if (commands.length <= 1) return Promise.allSettled(commands.map(write));
    const outcomes = await writeInOneTransaction(commands);
    const results: Array<PromiseSettledResult<WriteOutcome>> = [];
    // Alone and in order when the transaction rolled back, so each write sees the ones before it.
    for (const [index, command] of commands.entries()) {
      const outcome = outcomes?.[index];
      results.push(
        ...(await Promise.allSettled([outcome !== undefined ? outcome : write(command)])),
      );
    }
    return results;
  }

  return {
    kind: 'postgres',
    async lookup(principal, key) {
      const result = await query<StoredResponse>('lookup', sql.lookup, [principal, key]);
      return result.rows[0];
    },
    write,
    async lookupMany(principal, keys) {
      const found = new Map<string, StoredResponse>();
      if (keys.length === 0) return found;
      const result = await query<StoredResponse & { key: string }>('lookup-many', sql.lookupMany, [
        principal,
        keys,
      ]);
      for (const { key, ...stored } of result.rows) found.set(key, stored);
      return found;
    },
    writeMany,
    async getNote(principal, id) {
      const result = await query<NoteRecord>('get', sql.getNote, [principal, id]);
      return result.rows[0];
    },
    async getVersion(principal, id, revision) {
      const result = await query<NoteVersion>('version', sql.getVersion, [principal, id, revision]);
      return result.rows[0];
    },
    async listNotes(principal, limit) {
      const result = await query<NoteRecord>('list', sql.listNotes, [principal, limit]);
      return result.rows;
    },
    async editNote(principal, id, patch, now) {
      const values = [principal, id, patch.title ?? null, patch.body ?? null, now];
      const result = await query<NoteRecord>('edit', sql.edit, values);
      return result.rows[0];
    },
    async sweepExpired(cutoff, batchSize) {
      const ledger = await query('sweep', sql.sweep, [cutoff, batchSize]);
      const history = await query('sweep-history', sql.sweepHistory, [cutoff, batchSize]);
      return (ledger.rowCount ?? 0) + (history.rowCount ?? 0);
    },
    async summary(principal) {
      const result =
        principal === undefined
          ? await query<SummaryRow>('summary-all', sql.summaryAll, [])
          : await query<SummaryRow>('summary', sql.summary, [principal]);
      const row = result.rows[0];
      return {
        notes: Number(row?.notes ?? 0),
        deleted: Number(row?.deleted ?? 0),
        revisionSum: Number(row?.revision_sum ?? 0),
        receipts: Number(row?.receipts ?? 0),
      };
    },
    async close() {
      await pool.end();
    },
  };
}

/** Parameters of the statement that explains a miss: principal, key, note id. */
function missValues(command: WriteCommand): unknown[] {
  return [command.principal, command.key, command.id];
}

/** The outcome a miss row explains (see `explainMiss`), or `undefined` when it explains none. */
function readMiss(command: WriteCommand, row: MissRow | undefined): WriteOutcome | undefined {
  if (row?.fingerprint != null && row.status != null && row.response != null) {
    const response = {
      fingerprint: row.fingerprint,
      status: row.status,
      etag: row.etag,
      body: row.response,
    };
    return { kind: 'completed', response };
  }
  if (command.op === 'create') return undefined;
  if (!row || row.id === null || row.deleted) return { kind: 'not-found' };
  if (row.revision !== command.ifMatch) {
    const current = { id: row.id, revision: row.revision!, title: row.title!, body: row.body! };
    return { kind: 'conflict', current };
  }
  return undefined;
}

/** A write statement with its values, and how to read the stored response from its result. */
interface WriteStatement {
  name: string;
  text: string;
  values: unknown[];
  read(result: pg.QueryResult): StoredResponse | undefined;
}

interface SummaryRow {
  notes: string;
  deleted: string;
  revision_sum: string;
  receipts: string;
}

async function createSchema(pool: pg.Pool, sql: PostgresSql): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => {});
    throw new StoreUnavailableError('cannot connect to PostgreSQL', { cause: error });
  }
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    for (const statement of sql.schema) await client.query(statement);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

function isLedgerKey(error: unknown): boolean {
  const constraint = (error as { constraint?: unknown }).constraint;
  return typeof constraint === 'string' && constraint.startsWith('idempotency_ledger');
}
