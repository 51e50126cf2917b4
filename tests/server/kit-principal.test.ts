import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createOutboxKit,
  json,
  type LedgerStore,
  openSqliteDatabase,
  postgresLedger,
  sqliteLedger,
} from '../../server/kit/index.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { batchItem, dropSchema, newKey, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';

/**
 * The principal `authenticate` returns keys the ledger (SPEC §15), on both real ledgers alike: up
 * to 1,024 UTF-8 bytes it is kept and replayed; one that holds a NUL (no PostgreSQL text stores
 * one) or is longer (PostgreSQL's index takes about 2.7 KB an entry) is 401, not a 500 from the
 * ledger that a client would retry for ever, and nothing is stored; so is one with a lone
 * surrogate, which PostgreSQL would store as U+FFFD, under which two principals share entries.
 */
const schema = newSchema('kit_principal');
let pool: pg.Pool | undefined;
afterAll(async () => {
  await pool?.end();
  if (pool) await dropSchema(schema);
});

const ledgers: Array<[string, () => Promise<LedgerStore<unknown>>, boolean]> = [
  [
    'SQLite',
    async () => sqliteLedger(openSqliteDatabase(':memory:')) as LedgerStore<unknown>,
    false,
  ],
  [
    'PostgreSQL',
    async () => {
      pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
      return (await postgresLedger(pool, { schema })) as LedgerStore<unknown>;
    },
    PG_SKIP_REASON !== undefined,
  ],
];

describe.each(ledgers)('a principal on %s', (_name, open, skip) => {
  it.skipIf(skip)(
    'keeps and replays a principal of 1,024 bytes; one with a NUL or a lone surrogate, or of 1,025, is 401 and stores nothing',
    async () => {
      const ledger = await open();
      let effects = 0;
      const kitFor = (principal: string) => {
        const kit = createOutboxKit({ ledger, onError() {}, authenticate: () => principal });
        kit.route({ method: 'POST', path: '/w', handle: () => json(201, { n: ++effects }) });
        return kit;
      };
      const write = (principal: string, key: string) => {
        const item = batchItem('POST', '/w', { key, body: { n: 1 } });
        return kitFor(principal).fetch(
          new Request('http://kit.test/w', {
            method: 'POST',
            headers: item.headers,
            body: item.body,
          }),
        );
      };
      const longest = `${'é'.repeat(511)}ab`;
      const key = newKey();
      const first = await write(longest, key);
      expect(first.status).toBe(201);
      const replay = await write(longest, key);
      expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect(effects).toBe(1);
      for (const principal of [`${longest}c`, 'al\0ice', 'u\ud800', 'u\udc00']) {
        const refused = await write(principal, newKey());
        expect(refused.status).toBe(401);
        expect((await refused.json()).type).toBe(PROBLEM.authRequired);
      }
      expect(effects).toBe(1);
    },
  );
});
