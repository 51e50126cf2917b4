import type { ServerStore } from './port.ts';
import { openPostgresStore, type PostgresStoreOptions } from './postgres.ts';
import { openSqliteStore, type SqliteStoreOptions } from './sqlite.ts';

/** Which adapter to open, and how. */
export type StoreConfig =
  | ({ kind: 'sqlite' } & SqliteStoreOptions)
  | ({ kind: 'postgres' } & PostgresStoreOptions);

/** Opens an adapter and creates its schema (SPEC §15: SQLite by default, PostgreSQL by URL). */
export async function openStore(config: StoreConfig): Promise<ServerStore> {
  if (config.kind === 'postgres') return openPostgresStore(config);
  return openSqliteStore(config);
}

/** A one-line description for logs, without credentials. */
export function describeStore(config: StoreConfig): string {
  if (config.kind === 'sqlite') {
    return `sqlite ${config.path} (WAL, synchronous=${(config.durability ?? 'full').toUpperCase()})`;
  }
  const url = new URL(config.connectionString);
  return `postgres ${url.hostname}:${url.port || 5432}${url.pathname} schema ${config.schema ?? 'sw_outbox'}`;
}
