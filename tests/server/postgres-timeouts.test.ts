import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type RunningServer } from '../../server/index.ts';
import { isOutOfTime, isUnavailable } from '../../server/store/postgres-errors.ts';
import {
  Api,
  dropSchema,
  newSchema,
  newUser,
  PG_SKIP_REASON,
  PG_URL,
  startTestServer,
} from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL timeout tests skipped: ${PG_SKIP_REASON}`);

/**
 * SPEC §15: the database's own time limits are "busy right now" (503), never a 500; the
 * connection stays good, unlike the errors that mean the database is unreachable.
 */
describe('PostgreSQL errors that mean "not now"', () => {
  it.each([
    {
      code: '57014',
      what: 'a statement cancelled by statement_timeout',
      outOfTime: true,
      unavailable: false,
    },
    {
      code: '55P03',
      what: 'a lock not granted within lock_timeout',
      outOfTime: true,
      unavailable: false,
    },
    { code: '57P01', what: 'an administrator shutdown', outOfTime: false, unavailable: true },
    { code: '08006', what: 'a connection failure', outOfTime: false, unavailable: true },
    { code: '23505', what: 'a unique violation', outOfTime: false, unavailable: false },
    {
      code: '57014X',
      what: 'a code that only starts like one',
      outOfTime: false,
      unavailable: false,
    },
  ])(
    '$what ($code): out of time $outOfTime, unavailable $unavailable',
    ({ code, outOfTime, unavailable }) => {
      const error = Object.assign(new Error('x'), { code });
      expect(isOutOfTime(error)).toBe(outOfTime);
      expect(isUnavailable(error)).toBe(unavailable);
    },
  );
});

describe.skipIf(PG_SKIP_REASON !== undefined)(
  'a write that meets PostgreSQL’s lock and statement timeouts',
  () => {
    const schema = newSchema('timeouts');
    let other: pg.Client;
    let server: RunningServer;

    beforeAll(async () => {
      const timeouts = encodeURIComponent('-c lock_timeout=100 -c statement_timeout=2000');
      const url = `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}options=${timeouts}`;
      server = await startTestServer({
        store: await openPostgresStore({ connectionString: url, schema }),
      });
      other = new pg.Client({ connectionString: PG_URL });
      await other.connect();
    });
    afterAll(async () => {
      await other?.end();
      await server?.close();
      await server?.store.close();
      await dropSchema(schema);
    });

    it('answers 503 with Retry-After, stores nothing, and the same key goes through once the lock is gone', async () => {
      const api = await Api.login(server.url, newUser());
      await other.query('BEGIN');
      await other.query(`LOCK TABLE "${schema}".idempotency_ledger IN ACCESS EXCLUSIVE MODE`);
      let refused: Awaited<ReturnType<Api['create']>>;
      try {
        refused = await api.create('waits', { key: 'notes-000000000000000000000001' });
      } finally {
        await other.query('ROLLBACK');
      }
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      const again = await api.create('waits', { key: 'notes-000000000000000000000001' });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
    });
  },
);
