/**
 * `sw-outbox/shared`: the core the worker and the page are built from (SPEC §1) — for custom
 * runtimes, tests and tools: the model (row codec, errors, ports, protocol types), the pure
 * planners, the core over ports, the stores and the wire protocol. The service worker and the
 * page use it through `sw-outbox/sw` and `sw-outbox/client`.
 */

export type { OutboxCoreConfig } from './core/config.ts';
export type { OutboxCore } from './core/outbox-api.ts';
export { BUNDLE_VERSION, createOutboxCore } from './core/outbox-core.ts';
export { DEFAULT_TUNING, type OutboxTuning } from './core/tuning.ts';
export type { ConflictEvidence } from './model/conflict-evidence.ts';
export { fingerprintOf } from './model/digest.ts';
export { EnqueueInputSchema } from './model/enqueue-input.ts';
export { ERROR_CODES, type ErrorCode, isErrorCode } from './model/error-codes.ts';
export { OutboxError } from './model/errors.ts';
export type {
  CollectionHandler,
  ConflictFacts,
  ConflictPolicy,
  IntentInfo,
  PreparedRequest,
  ReceiptFacts,
} from './model/handler.ts';
export { canonicalJson, type Json } from './model/json.ts';
export type { Outcome } from './model/outcome.ts';
export * from './model/page-api.ts';
export type {
  Clock,
  IdSource,
  Logger,
  ReceiptLookup,
  Transport,
  TransportResult,
} from './model/ports.ts';
export {
  decodeRow,
  isIntentRow,
  type OutboxRow,
  OutboxRowSchema,
  PENDING_PREFIX,
  pendingCreateId,
  type RowRequest,
  type RowStatus,
} from './model/row.ts';
export { type BackoffConfig, backoffDelay, DEFAULT_BACKOFF } from './plan/backoff.ts';
export { isClaimMine, planClaim } from './plan/claim.ts';
export { classifyResult, parseRetryAfter } from './plan/classify.ts';
export { ledgerEntryFor } from './plan/conflict-ledger.ts';
export { buildConflictEvidence, planConflictSuccessor } from './plan/conflict-successor.ts';
export { planEnqueue } from './plan/enqueue.ts';
export { buildRowRequest, isValidId, newRequestId } from './plan/identity.ts';
export { isRowInFlight } from './plan/in-flight.ts';
export { planIntentConversion } from './plan/intent-conversion.ts';
export { mergeIntents } from './plan/merge.ts';
export { planQuarantine } from './plan/quarantine.ts';
export { rowStatus } from './plan/row-status.ts';
export { selectSendableRows, sendability } from './plan/select.ts';
export { planSettleFailure, planSettleSuccess } from './plan/settle.ts';
export { planSuccessorRebase } from './plan/successor-rebase.ts';
export * from './store/index.ts';
export { type RestHandlerOptions, restHandler } from './wire/rest-handler.ts';
