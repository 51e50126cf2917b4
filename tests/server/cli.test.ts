import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_RETENTION_MS, parseServerArgs } from '../../server/index.ts';
import { Api, newUser } from './helpers.ts';
import { spawnServer } from './process.ts';

describe('command line (SPEC §15 fixed points)', () => {
  it('defaults to SQLite with FULL durability on port 8080 without admin routes', () => {
    expect(parseServerArgs([], {})).toEqual({
      port: 8080,
      host: '127.0.0.1',
      store: { kind: 'sqlite', path: './sw-outbox.db', durability: 'full' },
      admin: false,
      staticDir: undefined,
      conflictIncludesCurrent: true,
      authSecret: undefined,
      retentionMs: DEFAULT_RETENTION_MS,
      bodyLimit: 65_536,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      corsOrigins: [],
      collections: [],
    });
  });

  it.each([
    [
      ['--port', '0', '--db', ':memory:'],
      {},
      { port: 0, store: { kind: 'sqlite', path: ':memory:', durability: 'full' } },
    ],
    [
      [],
      { PORT: '9000', DATABASE_URL: 'postgres://u@h/db' },
      {
        port: 9000,
        store: {
          kind: 'postgres',
          connectionString: 'postgres://u@h/db',
          schema: 'sw_outbox',
          poolSize: 10,
        },
      },
    ],
    [
      ['--db', 'x.db', '--sync', 'normal'],
      { DATABASE_URL: 'postgres://u@h/db' },
      { store: { kind: 'sqlite', path: 'x.db', durability: 'normal' } },
    ],
    [
      ['--db', 'postgresql://u@h/db', '--pg-schema', 'a_b', '--pool-size', '4'],
      {},
      {
        store: {
          kind: 'postgres',
          connectionString: 'postgresql://u@h/db',
          schema: 'a_b',
          poolSize: 4,
        },
      },
    ],
    [
      ['--admin', '--static', 'demo', '--no-conflict-copy'],
      {},
      { admin: true, staticDir: 'demo', conflictIncludesCurrent: false },
    ],
    [[], { SW_OUTBOX_ADMIN: '1', AUTH_SECRET: 'k' }, { admin: true, authSecret: 'k' }],
    [['--retention-days', '30'], {}, { retentionMs: 30 * 86_400_000 }],
    [['--host', '::1'], { HOST: 'ignored.example' }, { host: '::1' }],
    [
      ['--headers-timeout', '2000', '--request-timeout', '5000'],
      {},
      { headersTimeoutMs: 2000, requestTimeoutMs: 5000 },
    ],
    [['--no-batch'], {}, { batch: false }],
    [['--batch-path', '/v1/batch'], {}, { batch: { path: '/v1/batch' } }],
  ])('reads %j with env %j', (argv, env, expected) => {
    expect(parseServerArgs(argv, env)).toMatchObject(expected);
  });

  it.each([
    [['--port', 'eighty']],
    [['--sync', 'sometimes']],
    [['--retention-days', '3']],
    [['--headers-timeout', '0']],
    [['--headers-timeout', '40000']],
    [['--bogus']],
    [['--batch-path', 'sync/batch']],
    [['--batch-path', '/x', '--no-batch']],
  ])('rejects %j with a ConfigError', (argv) => {
    expect(() => parseServerArgs(argv, {})).toThrow(ConfigError);
  });

  it('refuses to start beyond loopback with the demo secret and says why', async () => {
    await expect(
      spawnServer(['--port', '0', '--db', ':memory:', '--host', '0.0.0.0']),
    ).rejects.toThrow(/refusing to listen on 0\.0\.0\.0: no auth secret is set/);
  });

  it('prints exactly the listening line with the real port, serves, and exits 0 on SIGTERM', async () => {
    const server = await spawnServer(['--port', '0', '--db', ':memory:']);
    try {
      expect(server.stdout()).toMatch(/^listening on http:\/\/127\.0\.0\.1:[1-9]\d*\n$/);
      const api = await Api.login(server.url, newUser());
      expect((await api.create('from the cli')).status).toBe(201);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
