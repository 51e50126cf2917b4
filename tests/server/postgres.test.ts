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
  });
});
