import pg from 'pg';
import type { Defer } from '../kit/ledger.ts';
import { postgresLedger } from '../kit/postgres-ledger.ts';
import { postgresDocuments, postgresDocumentsSchema } from './documents-postgres.ts';
import {
  applied,
  type NoteRecord,
  type NoteVersion,
  type NoteWriteResult,
  type ServerStore,
  StoreUnavailableError,
  type WriteCommand,
  writeThroughLedger,
} from './port.ts';
import { isOutOfTime, isUnavailable } from './postgres-errors.ts';
import { postgresSql } from './postgres-sql.ts';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  connectionString: string;
  /** Schema holding the tables; created on start. Default `sw_outbox`. */
  schema?: string;
  /** Connections in the pool. Default 10. */
  poolSize?: number;
  /**
   * Attempts of a write that failed with a serialization failure or a deadlock (40001/40P01)
   * before answering 503. Default 5.
   */
  maxAttempts?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
/** Serialises concurrent schema creation by several instances (CREATE … IF NOT EXISTS races). */
const SCHEMA_LOCK = 0x5730_0b0c;

interface NoteRow {
  id: string;
  revision: number;
  title: string;
  body: string;
  deleted: boolean;
}

/**
 * The adapter for several instances sharing one ledger (SPEC §15): the kit's PostgreSQL ledger
 * (server/kit/postgres-ledger.ts) and the notes in one schema. A write is the ledger's
 * transaction on one pooled client — the key's claim, then the note's statement here (one round
 * trip: compare-and-set, history and new row together, see postgres-sql.ts), then the stored
 * answer and COMMIT — so the note and the key's entry commit together or not at all. Named
 * prepared statements, so the server parses each statement once per connection.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<ServerStore> {
  const schema = options.schema ?? 'sw_outbox';
  if (!SCHEMA_NAME.test(schema)) throw new TypeError(`invalid PostgreSQL schema name: ${schema}`);
  const sql = postgresSql(schema);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
    // No idle timeout: pg-pool arms a timer on every release otherwise, twice per write here.
    idleTimeoutMillis: 0,
    // The ledger's BEGIN goes out with the write's first statement (kit/postgres-ledger.ts).
    pipeline: true,
  });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  await createSchema(pool, [...sql.schema, ...postgresDocumentsSchema(schema)]);
  let ledger: Awaited<ReturnType<typeof postgresLedger>>;
  try {
    ledger = await postgresLedger(pool, { schema, maxAttempts: options.maxAttempts ?? 5 });
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }

  const named = (name: string) => `${schema}:${name}`;

  async function query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) {
    try {
      return await pool.query<R>({ name: named(name), text, values });
    } catch (error) {
      if (isUnavailable(error))
        throw new StoreUnavailableError('PostgreSQL is unavailable', { cause: error });
      if (isOutOfTime(error))
        throw new StoreUnavailableError('PostgreSQL ran out of time', { cause: error });
      throw error;
    }
  }

  /** A note write on the ledger's transaction client (check 3 has claimed the key). */
  async function applyWrite(
    tx: unknown,
    command: WriteCommand,
    defer?: Defer,
  ): Promise<NoteWriteResult> {
    const client = tx as pg.PoolClient;
    const run = (name: string, text: string, values: unknown[]) =>
      client.query<NoteRow>({ name: named(name), text, values });
    const { principal, key, now } = command;
    if (command.op === 'create') {
      const { id, title, body } = command;
      // The answer is made from the input: the insert need not be waited for (kit/ledger.ts).
      const inserted = run('create', sql.create, [principal, id, title, body, now]);
      if (defer) defer(inserted);
      else await inserted;
      return applied(command, 201, { id, revision: 1, title, body });
    }
    const values = [principal, command.id, command.ifMatch, key, now];
    const result =
      command.op === 'update'
        ? await run('update', sql.update, [
            ...values,
            command.patch.title ?? null,
            command.patch.body ?? null,
          ])
        : await run('remove', sql.remove, values);
    const row = result.rows[0];
    if (row) {
      if (command.op === 'delete') {
        return applied(command, 200, { id: row.id, revision: row.revision, deleted: true });
      }
      const { id, revision, title, body } = row;
      return applied(command, 200, { id, revision, title, body });
    }
    // The compare-and-set matched nothing: the note is missing, deleted or at another revision.
    const current = (await run('current', sql.current, [principal, command.id])).rows[0];
    if (!current || current.deleted) return { kind: 'not-found' };
    const { id, revision, title, body } = current;
    return { kind: 'conflict', current: { id, revision, title, body } };
  }

  const store: ServerStore<pg.PoolClient> = {
    kind: 'postgres',
    ledger,
    documents: postgresDocuments(schema, query),
    applyWrite,
    lookup: (principal, key) => ledger.lookup(principal, key),
    lookupMany: (principal, keys) => ledger.lookupMany(principal, keys),
    write: (command) => writeThroughLedger(store, command),
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
      const entries = await ledger.sweepExpired(cutoff, batchSize);
      const history = await query('sweep-history', sql.sweepHistory, [cutoff, batchSize]);
      return entries + (history.rowCount ?? 0);
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
  return store as ServerStore;
}

interface SummaryRow {
  notes: string;
  deleted: string;
  revision_sum: string;
  receipts: string;
}

async function createSchema(pool: pg.Pool, statements: readonly string[]): Promise<void> {
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
    for (const statement of statements) await client.query(statement);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
