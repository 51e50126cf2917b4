import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchItem,
  digestOf,
  dropSchema,
  newKey,
  newSchema,
  newUser,
  PG_SKIP_REASON,
  PG_URL,
} from './helpers.ts';
import { type ServerChild, spawnScript } from './process.ts';

if (PG_SKIP_REASON) console.warn(`two-process kit test skipped: ${PG_SKIP_REASON}`);

/**
 * SPEC §22.1: several processes of an app share one PostgreSQL ledger; a storm of one key split
 * across them is one effect in the app's own table.
 */
describe.skipIf(PG_SKIP_REASON !== undefined)('two kit processes on one PostgreSQL ledger', () => {
  const schema = newSchema('kit_processes');
  let servers: ServerChild[] = [];
  let pool: pg.Pool;

  beforeAll(async () => {
    const env = { KIT_PG_URL: PG_URL, KIT_PG_SCHEMA: schema };
    // One first, so the schema exists before the second creates its tables.
    servers = [await spawnScript('tests/server/kit-process.ts', [], env)];
    servers.push(await spawnScript('tests/server/kit-process.ts', [], env));
    pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await pool?.end();
    await dropSchema(schema);
  });

  const todos = async (user: string) =>
    (
      await pool.query(`SELECT count(*)::int AS n FROM "${schema}".todos WHERE principal = $1`, [
        user,
      ])
    ).rows[0].n as number;

  const create = (url: string, user: string, key: string, title: string) => {
    const body = JSON.stringify({ title });
    return fetch(`${url}/api/todos`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${user}`,
        'content-type': 'application/json',
        'idempotency-key': `"${key}"`,
        'content-digest': digestOf(body),
      },
      body,
    });
  };

  it('lets 50 concurrent copies of one key, spread over both processes, make exactly one todo', async () => {
    const user = newUser();
    const key = newKey('todo');
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const response = await create(servers[i % 2]!.url, user, key, 'storm');
        return {
          status: response.status,
          text: await response.text(),
          replayed: response.headers.get('idempotent-replayed'),
        };
      }),
    );
    for (const answer of answers) expect([201, 409]).toContain(answer.status);
    const created = answers.filter((answer) => answer.status === 201);
    expect(created.length).toBeGreaterThan(0);
    expect(new Set(created.map((answer) => answer.text)).size).toBe(1);
    expect(created.filter((answer) => answer.replayed === null).length).toBe(1);
    expect(await todos(user)).toBe(1);
    // Either process answers the key from the shared ledger afterwards.
    for (const server of servers) {
      const again = await create(server.url, user, key, 'storm');
      expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect(await again.text()).toBe(created[0]!.text);
    }
  });

  it('lets racing copies of one batch on both processes write each key exactly once', async () => {
    const user = newUser();
    const items = Array.from({ length: 10 }, (_, i) =>
      batchItem('POST', '/api/todos', { body: { title: `b${i}` } }),
    );
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const response = await fetch(`${servers[i % 2]!.url}/sync/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
          body: JSON.stringify({ items }),
        });
        return { status: response.status, json: await response.json() };
      }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      for (const item of answer.json.items) expect([201, 409]).toContain(item.status);
    }
    expect(await todos(user)).toBe(10);
  });
});
