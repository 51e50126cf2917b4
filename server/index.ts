/**
 * The reference server of sw-outbox (SPEC §15): an idempotency ledger with the three checks,
 * revision compare-and-set, receipt lookup and fault injection, on SQLite or PostgreSQL.
 */
export {
  type AppOptions,
  type BatchConfig,
  buildApp,
  DEFAULT_BATCH_LIMITS,
  DEFAULT_BODY_LIMIT,
  DEFAULT_RETENTION_MS,
} from './app.ts';
export {
  DEFAULT_CLOCK_SKEW_MS,
  DEMO_AUTH_SECRET,
  DemoAuth,
  type DemoAuthOptions,
  isLoopback,
  MIN_AUTH_SECRET_LENGTH,
  secretWeakness,
  type TokenCheck,
  USER_PATTERN,
} from './auth.ts';
export { type CliOptions, ConfigError, parseServerArgs, USAGE } from './config.ts';
export {
  FaultInjector,
  type FaultRule,
  type FaultRuleInput,
  FaultRuleInputSchema,
  type FaultRuleSpec,
  type FaultTarget,
} from './faults.ts';
export {
  EMPTY_BODY_DIGEST,
  parseContentDigest,
  requestFingerprint,
  sha256Digest,
} from './fingerprint.ts';
export { DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './http-server.ts';
export { type RunningServer, type StartOptions, startServer } from './start.ts';
export { type PrincipalCounters, type PrincipalStats, ServerStats } from './stats.ts';
export { describeStore, openStore, type StoreConfig } from './store/open.ts';
export type {
  NotePatch,
  NoteRecord,
  ServerStore,
  StoredResponse,
  StoreSummary,
  WriteCommand,
  WriteIdentity,
  WriteIntent,
  WriteOutcome,
} from './store/port.ts';
export { StoreUnavailableError } from './store/port.ts';
export { openPostgresStore, type PostgresStoreOptions } from './store/postgres.ts';
export { openSqliteStore, type SqliteDurability, type SqliteStoreOptions } from './store/sqlite.ts';
export { type Sweeper, type SweeperOptions, startSweeper } from './sweeper.ts';
