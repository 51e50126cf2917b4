/**
 * `sw-outbox/shared`: the environment-free core (SPEC §1) — for custom runtimes, tests and
 * tools. The service worker and the page use it through `sw-outbox/sw` and `sw-outbox/client`.
 */
export { type BackoffConfig, backoffDelay, DEFAULT_BACKOFF } from './backoff.ts';
export { isClaimMine, planClaim } from './claim.ts';
export { classifyResult, type Outcome, parseRetryAfter } from './classify.ts';
export {
  buildConflictEvidence,
  type ConflictEvidence,
  ledgerEntryFor,
  planConflictSuccessor,
} from './conflict.ts';
export type { OutboxCore, OutboxCoreConfig, OutboxTuning } from './core-types.ts';
export { planEnqueue } from './enqueue.ts';
export { ERROR_CODES, type ErrorCode, isErrorCode, OutboxError } from './errors.ts';
export type {
  CollectionHandler,
  ConflictFacts,
  ConflictPolicy,
  IntentInfo,
  PreparedRequest,
  ReceiptFacts,
} from './handler.ts';
export { buildRowRequest, fingerprintOf, isValidId, newRequestId } from './identity.ts';
export { isRowInFlight } from './inflight.ts';
export { planIntentConversion } from './intents.ts';
export { canonicalJson, type Json } from './json.ts';
export { mergeIntents } from './merge.ts';
export { BUNDLE_VERSION, createOutboxCore, DEFAULT_TUNING } from './outbox.ts';
export type {
  Clock,
  IdSource,
  Logger,
  ReceiptLookup,
  Transport,
  TransportResult,
} from './ports.ts';
export * from './protocol.ts';
export { planQuarantine } from './quarantine.ts';
export { type RestHandlerOptions, restHandler } from './rest-handler.ts';
export {
  decodeRow,
  isIntentRow,
  type OutboxRow,
  OutboxRowSchema,
  PENDING_PREFIX,
  pendingCreateId,
  type RowRequest,
  type RowStatus,
} from './row.ts';
export { rowStatus, selectSendableRows, sendability } from './select.ts';
export { planSettleFailure, planSettleSuccess } from './settle.ts';
export * from './store/index.ts';
export { planSuccessorRebase } from './successors.ts';
