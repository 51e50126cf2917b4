import pg from 'pg';
import { describe } from 'vitest';
import { openPostgresStore } from '../../server/index.ts';
import { defineServerConformance } from './conformance.ts';
import { dropSchema, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL conformance suite skipped: ${PG_SKIP_REASON}`);

describe.skipIf(PG_SKIP_REASON !== undefined)('PostgreSQL adapter', () => {
  const schema = newSchema('conformance');
  defineServerConformance(`PostgreSQL (schema ${schema})`, {
    open: () => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 8 }),
    cleanup: () => dropSchema(schema),
    // A trigger that raises on the ledger insert of one key: the whole write statement aborts.
    async failLedgerInsert(key) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`CREATE FUNCTION "${schema}".fail_one_key() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN
          IF NEW.key = '${key}' THEN RAISE EXCEPTION 'refused by the test'; END IF;
          RETURN NEW;
        END $$`);
      await client.query(`CREATE TRIGGER fail_one_key BEFORE INSERT ON "${schema}".idempotency_ledger
        FOR EACH ROW EXECUTE FUNCTION "${schema}".fail_one_key()`);
      return async () => {
        await client.query(`DROP FUNCTION "${schema}".fail_one_key() CASCADE`);
        await client.end();
      };
    },
  });
});
