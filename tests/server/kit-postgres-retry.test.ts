import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboxKit, json, type LedgerStore, postgresLedger } from '../../server/kit/index.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { batchItem, dropSchema, newKey, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL kit retry test skipped: ${PG_SKIP_REASON}`);

/**
 * SPEC §15 "never raise a raw serialization failure to the client": the kit's PostgreSQL ledger
 * retries a transaction that failed with a serialization failure, a deadlock or a lock timeout a
 * bounded number of times, then answers 503; a copy that waits too long on another process's
 * claim of its key is 409.
 */
describe.skipIf(PG_SKIP_REASON !== undefined)('the kit on PostgreSQL under contention', () => {
  const schema = newSchema('kit_retry');
  let pool: pg.Pool;
  let ledger: LedgerStore<pg.PoolClient>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 6 });
    ledger = await postgresLedger(pool, { schema, maxAttempts: 3, lockTimeoutMs: 200 });
    await pool.query(`CREATE TABLE "${schema}".effects (key text PRIMARY KEY)`);
  });
  afterAll(async () => {
    await pool?.end();
    await dropSchema(schema);
  });

  const effects = async (key: string) =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE key = $1`, [key]))
      .rows[0].n as number;
  const post = (key: string) => {
    const item = batchItem('POST', '/effects', { key, body: { n: 1 } });
    return new Request('http://kit.test/effects', {
      method: 'POST',
      headers: item.headers,
      body: item.body,
    });
  };

  /** A kit whose handler writes one row, then fails with `code` for its first `failures` runs. */
  function kitFailing(code: string, failures: number) {
    let runs = 0;
    const kit = createOutboxKit({ ledger, authenticate: () => 'alice', onError() {} });
    kit.route({
      method: 'POST',
      path: '/effects',
      async handle({ tx, key }) {
        runs++;
        await tx.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key]);
        if (runs <= failures) throw Object.assign(new Error(`failure ${code}`), { code });
        return json(201, { key });
      },
    });
    return { kit, runs: () => runs };
  }

  it.each(['40001', '40P01', '55P03'])(
    'retries a transaction that failed with %s, and the effect happens once',
    async (code) => {
      const { kit, runs } = kitFailing(code, 2);
      const key = newKey('retry');
      const answer = await kit.fetch(post(key));
      expect(answer.status).toBe(201);
      expect(runs()).toBe(3);
      expect(await effects(key)).toBe(1);
    },
  );

  it('answers 503 with Retry-After once the attempts run out, and keeps nothing', async () => {
    const { kit, runs } = kitFailing('40001', 100);
    const key = newKey('retry');
    const answer = await kit.fetch(post(key));
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1']);
    expect((await answer.json()).type).toBe(PROBLEM.unavailable);
    expect(runs()).toBe(3);
    expect(await effects(key)).toBe(0);
    expect(await ledger.lookup('alice', key)).toBeUndefined();
  });

  it('answers 409 to a copy that waits on another instance’s claim longer than lock_timeout', async () => {
    const key = newKey('held');
    const slow = createOutboxKit({ ledger, authenticate: () => 'alice' });
    slow.route({
      method: 'POST',
      path: '/effects',
      async handle({ tx }) {
        await tx.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key]);
        await new Promise((resolve) => setTimeout(resolve, 800));
        return json(201, { key });
      },
    });
    // Another instance: its own in-flight registry does not know the key.
    const other = createOutboxKit({ ledger, authenticate: () => 'alice' });
    other.route({ method: 'POST', path: '/effects', handle: () => json(201, { other: true }) });
    const first = slow.fetch(post(key));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const copy = await other.fetch(post(key));
    expect([copy.status, copy.headers.get('retry-after')]).toEqual([409, '1']);
    expect((await copy.json()).type).toBe(PROBLEM.inProgress);
    expect((await first).status).toBe(201);
    const replay = await other.fetch(post(key));
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(await effects(key)).toBe(1);
  });

  it.each([
    ['quotes and backslashes', "o'brien \\ '; DROP TABLE x; --", 'it\'s \\ "quoted" \\\''],
    ['a NUL in the answer (sent as a parameter)', 'nul-answer', 'a\u0000b'],
  ])(
    'keeps a principal and an answer with %s exactly, and replays them byte for byte',
    async (_name, principal, text) => {
      const kit = createOutboxKit({ ledger, authenticate: () => principal, onError() {} });
      kit.route({
        method: 'POST',
        path: '/effects',
        async handle({ tx, key }) {
          await tx.query(`INSERT INTO "${schema}".effects (key) VALUES ($1)`, [key]);
          return {
            status: 201,
            headers: { 'content-type': 'application/json', etag: `"1'\\"` },
            body: JSON.stringify({ text }).replace('\\u0000', '\u0000'),
          };
        },
      });
      const key = newKey('literal');
      const first = await kit.fetch(post(key));
      const body = await first.text();
      const stored = await ledger.lookup(principal, key);
      if (text.includes('\u0000')) {
        // PostgreSQL text holds no NUL: the write fails as a whole and leaves nothing.
        expect(first.status).toBe(500);
        expect(stored).toBeUndefined();
        expect(await effects(key)).toBe(0);
        return;
      }
      expect(first.status).toBe(201);
      expect(stored).toMatchObject({ status: 201, etag: `"1'\\"`, body });
      const replay = await kit.fetch(post(key));
      expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect(await replay.text()).toBe(body);
      expect(await effects(key)).toBe(1);
    },
  );
});
