import { parseArgs } from 'node:util';
import { DEFAULT_RETENTION_MS } from './app.ts';
import { ConfigError } from './config-error.ts';
import { parseCorsOrigins } from './cors.ts';
import { collectionNameProblem } from './routes/collections.ts';
import { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './http-server.ts';
import type { StartOptions } from './start.ts';
import type { StoreConfig } from './store/open.ts';

/** Usage text of the `sw-outbox-server` command (`npm run server -- …` in this repository). */
export const USAGE = `usage: sw-outbox-server [options]
  --port <n>             port, 0 for a free one (env PORT, default 8080)
  --host <address>       address to listen on (default 127.0.0.1); beyond loopback it needs
                         --auth-secret (at least 32 characters) and refuses --admin
  --db <target>          SQLite file, :memory:, or a postgres:// URL
                         (env DATABASE_URL selects PostgreSQL; default ./sw-outbox.db)
  --sync <normal|full>   SQLite synchronous level in WAL mode (env SQLITE_SYNC, default full)
  --pg-schema <name>     PostgreSQL schema for the tables (env PG_SCHEMA, default sw_outbox)
  --pool-size <n>        PostgreSQL connections (default 10)
  --admin                enable /__faults and /__stats (env SW_OUTBOX_ADMIN=1)
  --static <dir>         serve files from <dir> for other GET requests
  --cors-origin <origin> let pages of <origin> call the server (repeatable; env CORS_ORIGINS,
                         comma-separated), e.g. --cors-origin https://app.example.com
  --collection <name>    serve a schemaless JSON collection at /api/<name> beside /api/notes
                         (repeatable; env COLLECTIONS, comma-separated), e.g. --collection todos
  --no-conflict-copy     send only currentRevision with a 412, not the server copy
  --auth-secret <s>      demo token secret, shared by instances (env AUTH_SECRET); without
                         it the public demo secret signs tokens for loopback clients only
  --retention-days <n>   ledger retention, at least 7 (default 7)
  --body-limit <bytes>   request body limit (default 65536); each batch item's body has it too
  --batch-path <path>    path of the batch endpoint (default /sync/batch)
  --no-batch             no batch endpoint: a batch gets 404, clients send one request per row
  --headers-timeout <ms> time for a request's headers to arrive (default ${DEFAULT_HEADERS_TIMEOUT_MS})
  --request-timeout <ms> time for a whole request to arrive (default ${DEFAULT_REQUEST_TIMEOUT_MS});
                         slower clients get 408 request-timeout`;

export { ConfigError } from './config-error.ts';

type Env = Record<string, string | undefined>;

/** Start options from the command line: the store is always a config to open. */
export type CliOptions = StartOptions & { store: StoreConfig };

/** Turns CLI arguments and environment into start options (flags win over the environment). */
export function parseServerArgs(argv: readonly string[], env: Env = {}): CliOptions | 'help' {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(argv).values;
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (values.help) return 'help';

  const retentionDays = integer('--retention-days', values['retention-days'], 7);
  if (retentionDays < 7) throw new ConfigError('--retention-days must be at least 7 (SPEC §15)');
  const adminEnv = env.SW_OUTBOX_ADMIN;
  const headersTimeoutMs = integer(
    '--headers-timeout',
    values['headers-timeout'],
    DEFAULT_HEADERS_TIMEOUT_MS,
  );
  const requestTimeoutMs = integer(
    '--request-timeout',
    values['request-timeout'],
    DEFAULT_REQUEST_TIMEOUT_MS,
  );
  if (headersTimeoutMs < 1 || requestTimeoutMs < headersTimeoutMs)
    throw new ConfigError('--headers-timeout must be at least 1 and at most --request-timeout');
  return {
    port: integer('--port', values.port ?? env.PORT, 8080),
    host: values.host ?? '127.0.0.1',
    store: storeConfig(values, env),
    admin: values.admin === true || adminEnv === '1' || adminEnv === 'true',
    staticDir: values.static,
    conflictIncludesCurrent: values['no-conflict-copy'] !== true,
    authSecret: values['auth-secret'] ?? env.AUTH_SECRET,
    retentionMs: retentionDays === 7 ? DEFAULT_RETENTION_MS : retentionDays * 24 * 60 * 60 * 1000,
    bodyLimit: integer('--body-limit', values['body-limit'], 64 * 1024),
    batch: batchConfig(values),
    headersTimeoutMs,
    requestTimeoutMs,
    corsOrigins: corsOrigins(values['cors-origin'] ?? env.CORS_ORIGINS?.split(',') ?? []),
    collections: collections(values.collection ?? env.COLLECTIONS?.split(',') ?? []),
  };
}

function collections(values: readonly string[]): string[] {
  const names = values.map((value) => value.trim()).filter((value) => value !== '');
  for (const name of names) {
    const problem = collectionNameProblem(name);
    if (problem) throw new ConfigError(`--collection: ${problem}`);
  }
  return [...new Set(names)];
}

function corsOrigins(values: readonly string[]): string[] {
  try {
    return parseCorsOrigins(values.map((value) => value.trim()).filter((value) => value !== ''));
  } catch (error) {
    throw new ConfigError(`--cors-origin: ${(error as Error).message}`);
  }
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      sync: { type: 'string' },
      'pg-schema': { type: 'string' },
      'pool-size': { type: 'string' },
      admin: { type: 'boolean' },
      static: { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      collection: { type: 'string', multiple: true },
      'no-conflict-copy': { type: 'boolean' },
      'auth-secret': { type: 'string' },
      'retention-days': { type: 'string' },
      'body-limit': { type: 'string' },
      'batch-path': { type: 'string' },
      'no-batch': { type: 'boolean' },
      'headers-timeout': { type: 'string' },
      'request-timeout': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

function storeConfig(values: ReturnType<typeof parse>['values'], env: Env): StoreConfig {
  const target = values.db ?? env.DATABASE_URL ?? './sw-outbox.db';
  if (/^postgres(ql)?:\/\//.test(target)) {
    return {
      kind: 'postgres',
      connectionString: target,
      schema: values['pg-schema'] ?? env.PG_SCHEMA ?? 'sw_outbox',
      poolSize: integer('--pool-size', values['pool-size'], 10),
    };
  }
  const sync = (values.sync ?? env.SQLITE_SYNC ?? 'full').toLowerCase();
  if (sync !== 'normal' && sync !== 'full') throw new ConfigError('--sync must be normal or full');
  return { kind: 'sqlite', path: target, durability: sync };
}

/** `undefined` for the default endpoint, `false` for none. */
function batchConfig(values: ReturnType<typeof parse>['values']): CliOptions['batch'] {
  const path = values['batch-path'];
  if (values['no-batch'] === true) {
    if (path !== undefined) throw new ConfigError('--batch-path and --no-batch exclude each other');
    return false;
  }
  if (path === undefined) return undefined;
  if (!/^\/[A-Za-z0-9._~/-]*$/.test(path))
    throw new ConfigError(`--batch-path must be a path such as /sync/batch, got ${path}`);
  return { path };
}

function integer(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value))
    throw new ConfigError(`${name} must be a non-negative integer, got ${value}`);
  return Number(value);
}
