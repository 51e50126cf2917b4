import { describe } from 'vitest';
import { dropSchema, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';
import { defineKitConformance } from './kit-conformance.ts';
import { openTodoApp } from './kit-todo-app.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL kit suite skipped: ${PG_SKIP_REASON}`);

describe.skipIf(PG_SKIP_REASON !== undefined)('the kit on PostgreSQL', () => {
  const schema = newSchema('kit');
  defineKitConformance(
    `PostgreSQL (schema ${schema})`,
    (options) => openTodoApp({ kind: 'postgres', connectionString: PG_URL, schema, ...options }),
    () => dropSchema(schema),
  );
});

describe.skipIf(PG_SKIP_REASON !== undefined)('the kit on PostgreSQL, pipelined', () => {
  const schema = newSchema('kitpipe');
  defineKitConformance(
    `PostgreSQL, a pool in pipeline mode (schema ${schema})`,
    (options) =>
      openTodoApp({
        kind: 'postgres',
        connectionString: PG_URL,
        schema,
        pipeline: true,
        ...options,
      }),
    () => dropSchema(schema),
  );
});
