/**
 * `sw-outbox-server/kit` (SPEC §22.1): exactly-once writes for an app's own server. The kit keeps
 * SPEC §15 and §15.1 — the three checks, replays, 409/422/400, the receipt lookup, the batch
 * endpoint, problem answers, revision helpers — for the write routes an app registers, over the
 * Fetch API, and runs each write handler inside the transaction that claims its key, with the
 * app's own database client. Adapters put it in front of Hono, Express and Fastify.
 */

export type { Answer } from '../problem.ts';
export { StoreUnavailableError } from '../unavailable.ts';
export { type Sweeper, type SweeperOptions, startSweeper } from '../sweeper.ts';
export {
  type ConflictOptions,
  invalid,
  type JsonOptions,
  json,
  notFound,
  problem,
  recordVersion,
  revisionConflict,
  type Validation,
  valid,
} from './answers.ts';
export type {
  KitCommitPhase,
  KitCounter,
  KitHooks,
  KitStats,
  KitTarget,
  KitWriteTarget,
} from './hooks.ts';
export type { LedgerClaim, LedgerStore, StoredResponse, TransactOutcome } from './ledger.ts';
export { handleNodeRequest, kitRequestListener, toFetchRequest } from './node-http.ts';
export {
  createOutboxKit,
  DEFAULT_KIT_BODY_LIMIT,
  DEFAULT_KIT_RETENTION_MS,
  type KitEndpoint,
  type KitWrite,
  type OutboxKit,
  type OutboxKitOptions,
  RECEIPT_PATH,
  RETENTION_HEADER,
  type WriteInput,
  type WriteMethod,
  type WriteRoute,
} from './outbox-kit.ts';
export { type PostgresLedgerOptions, postgresLedger } from './postgres-ledger.ts';
export { openSqliteDatabase, type SqliteDatabaseOptions, sqliteLedger } from './sqlite-ledger.ts';
