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
    kit.route({
      method: 'POST',
      path: '/broken',
      handle({ tx, key, defer }) {
        defer(tx.query(`INSERT INTO "${schema}".no_such_table (key) VALUES ($1)`, [key]));
        return json(201, { key });
      },
    });
    return kit;
  }

  const batch = (items: ReturnType<typeof batchItem>[]) =>
    new Request('http://kit.test/sync/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
  const statuses = async (answer: Response) =>
    ((await answer.json()).items as Array<{ status: number }>).map((item) => item.status);

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

  it('runs a batch in one transaction, and alone each when one write fails: its 500, the others kept', async () => {
    const kit = deferringKit();
    const keys = [newKey('b'), newKey('b'), newKey('b')];
    const together = await kit.fetch(
      batch(keys.map((key) => batchItem('POST', '/effects', { key, body: { n: 1 } }))),
    );
    expect(await statuses(together)).toEqual([201, 201, 201]);
    const mixed = [newKey('m'), newKey('m'), newKey('m')];
    const answer = await kit.fetch(
      batch([
        batchItem('POST', '/effects', { key: mixed[0], body: { n: 1 } }),
        batchItem('POST', '/broken', { key: mixed[1], body: {} }),
        batchItem('POST', '/effects', { key: mixed[2], body: { n: 1 } }),
      ]),
    );
    expect(await statuses(answer)).toEqual([201, 500, 201]);
    for (const key of [...keys, mixed[0]!, mixed[2]!]) expect(await effects(key)).toBe(1);
    expect(await ledger.lookup('alice', mixed[1]!)).toBeUndefined();
  });

  it('applies 10 racing copies of one batch on two instances once per key', async () => {
    const [one, two] = [deferringKit(), deferringKit()];
    const keys = Array.from({ length: 5 }, () => newKey('bs'));
    const items = keys.map((key) => batchItem('POST', '/effects', { key, body: { n: 1 } }));
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? one : two).fetch(batch(items))),
    );
    for (const answer of answers) {
      for (const status of await statuses(answer)) expect([201, 409]).toContain(status);
    }
    for (const key of keys) expect(await effects(key)).toBe(1);
  });
});
