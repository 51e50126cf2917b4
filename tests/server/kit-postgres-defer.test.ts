import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboxKit, json, type LedgerStore, postgresLedger } from '../../server/kit/index.ts';
import { batchItem, dropSchema, newKey, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL deferred-write test skipped: ${PG_SKIP_REASON}`);

/**
 * A handler that defers its statement on a pool in pipeline mode (kit/ledger.ts `defer`): the
 * claim, the statement, the stored answer and COMMIT leave together, before any result is read.
 * The guarantees stay: one effect per key under racing copies, nothing kept when the deferred
 * statement fails, and the key free again afterwards.
 */
describe.skipIf(PG_SKIP_REASON !== undefined)('the kit on PostgreSQL, deferred statements', () => {
  const schema = newSchema('kit_defer');
  let pool: pg.Pool;
  let ledger: LedgerStore<pg.PoolClient>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 6, pipeline: true });
    ledger = await postgresLedger(pool, { schema });
    // No unique key: only the ledger keeps a second copy's insert from committing.
    await pool.query(`CREATE TABLE "${schema}".effects (key text NOT NULL, n integer NOT NULL)`);
  });
  afterAll(async () => {
    await pool?.end();
    await dropSchema(schema);
  });

  const effects = async (key: string) =>
    (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".effects WHERE key = $1`, [key]))
      .rows[0].n as number;
  const post = (key: string, n = 1) => {
    const item = batchItem('POST', '/effects', { key, body: { n } });
    return new Request('http://kit.test/effects', {
      method: 'POST',
      headers: item.headers,
      body: item.body,
    });
  };

  /** A kit whose handler defers one insert (into `table`) and answers at once. */
  function deferringKit(table = 'effects') {
    const kit = createOutboxKit({ ledger, authenticate: () => 'alice', onError() {} });
    kit.route({
      method: 'POST',
      path: '/effects',
      handle({ tx, key, body, defer }) {
        const { n } = body as { n: number };
        defer(tx.query(`INSERT INTO "${schema}".${table} (key, n) VALUES ($1, $2)`, [key, n]));
        return json(201, { key, n });
      },
    });
    return kit;
  }

  it('applies a deferred write once, answers it, and replays it', async () => {
    const kit = deferringKit();
    const key = newKey('defer');
    const first = await kit.fetch(post(key));
    expect([first.status, await first.json()]).toEqual([201, { key, n: 1 }]);
    const replay = await kit.fetch(post(key));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await effects(key)).toBe(1);
  });

  it('applies 30 racing copies on two instances once: the rest are answered from the ledger or 409', async () => {
    const [one, two] = [deferringKit(), deferringKit()];
    const key = newKey('storm');
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? one : two).fetch(post(key))),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
    const fresh = answers.filter(
      (answer) => answer.status === 201 && answer.headers.get('idempotent-replayed') === null,
    );
    expect(fresh).toHaveLength(1);
    expect(await effects(key)).toBe(1);
    expect(await ledger.lookup('alice', key)).toMatchObject({ status: 201 });
  });

  it('keeps nothing when the deferred statement fails, and the key works afterwards', async () => {
    const key = newKey('broken');
    const broken = await deferringKit('no_such_table').fetch(post(key));
    expect(broken.status).toBe(500);
    expect(await ledger.lookup('alice', key)).toBeUndefined();
    const retried = await deferringKit().fetch(post(key));
    expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([201, null]);
    expect(await effects(key)).toBe(1);
  });
});
