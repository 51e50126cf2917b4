import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type ServerStore, StoreUnavailableError } from '../../server/index.ts';
import {
  dropSchema,
  newKey,
  newSchema,
  newUser,
  PG_SKIP_REASON,
  PG_URL,
  waitFor,
} from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL retry tests skipped: ${PG_SKIP_REASON}`);

/**
 * SPEC §15: a serialization failure or deadlock is retried a bounded number of times, then
 * answered as 503, never raised raw. A deadlock is forced: another session holds the note row
 * our update needs while it waits for the ledger key our update has claimed.
 */
describe.skipIf(PG_SKIP_REASON !== undefined)('PostgreSQL deadlock retries', () => {
  const schema = newSchema('retry');
  let other: pg.Client;

  beforeAll(async () => {
    other = new pg.Client({ connectionString: PG_URL });
    await other.connect();
    // PostgreSQL picks as the deadlock victim the session whose deadlock check runs first. On a
    // loaded machine the timers of two waiting sessions may fire in either order; with this
    // session's check far later, the store's write is always the one that sees 40P01.
    await other.query(`SET deadlock_timeout = '20s'`);
  });
  afterAll(async () => {
    await other?.end();
    await dropSchema(schema);
  });

  async function deadlock(store: ServerStore) {
    const principal = newUser();
    const id = newKey('note');
    await store.write({
      op: 'create',
      principal,
      key: newKey(),
      fingerprint: 'f',
      now: 1,
      id,
      title: 't',
      body: 'b',
    });
    const key = newKey();
    // The other session holds the note's row; the store's update claims its key (the kit's
    // ledger claims first), then waits for the row.
    await other.query('BEGIN');
    await other.query(
      `UPDATE "${schema}".notes SET body = 'other' WHERE principal = $1 AND id = $2`,
      [principal, id],
    );
    const write = store.write({
      op: 'update',
      principal,
      key,
      fingerprint: 'f',
      now: 2,
      id,
      ifMatch: 1,
      patch: { body: 'once' },
    });
    write.catch(() => {});
    await waitFor(async () => {
      const waiting = await other.query(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%notes%' AND pid <> pg_backend_pid()`,
      );
      return waiting.rowCount === 1;
    });
    // Now the other session waits for the key the update holds: a deadlock.
    const blocked = other.query(
      `INSERT INTO "${schema}".idempotency_ledger (principal, key, fingerprint, status, body, created_at) VALUES ($1, $2, 'x', 200, '{}', 1)`,
      [principal, key],
    );
    // The deadlock victim gets 40P01; the other session then ends either way.
    await blocked.catch(() => {});
    await other.query('ROLLBACK');
    const settled = await Promise.allSettled([write]);
    return { principal, key, id, settled: settled[0]! };
  }

  it('retries a deadlock victim and applies the write once', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema, poolSize: 2 });
    try {
      const { principal, id, settled } = await deadlock(store);
      // Ours checks for deadlocks first (the other session's check waits 20 s), so it is the
      // victim; the retry then runs after the other session rolled back.
      expect(settled.status).toBe('fulfilled');
      expect(await store.getNote(principal, id)).toMatchObject({ revision: 2, body: 'once' });
    } finally {
      await store.close();
    }
  });

  it('answers StoreUnavailableError (503) when the attempts run out', async () => {
    const store = await openPostgresStore({
      connectionString: PG_URL,
      schema,
      poolSize: 2,
      maxAttempts: 1,
    });
    try {
      const { principal, key, settled } = await deadlock(store);
      expect(settled.status).toBe('rejected');
      expect((settled as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      expect(await store.lookup(principal, key)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('refuses to start with StoreUnavailableError when PostgreSQL is unreachable', async () => {
    await expect(
      openPostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:1/none', schema }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
