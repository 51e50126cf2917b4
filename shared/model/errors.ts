/**
 * Every error code that crosses a boundary (page API, row quarantine, telemetry), each with a
 * one-line hint on how to recover. Codes are stable snake_case strings (SPEC §13, STYLE).
 */
export const ERROR_CODES = {
  invalid_intent: 'The intent did not match the enqueue schema; fix the call (see details.issues).',
  invalid_argument: 'An argument to an outbox call was malformed; see details for which and why.',
  invalid_id: 'Ids must match ^[A-Za-z0-9_-]{8,80}$; pass such an id or let the engine make one.',
  target_deleted: 'A delete for this record is already queued; the record cannot be edited again.',
  owner_mismatch: 'This connection serves another owner; open a new connectOutbox for this owner.',
  quota_exceeded: 'The browser refused to store more data; free space or discard rows, then retry.',
  row_too_large:
    'The stored row (payload, meta and request together) would exceed maxRowBytes; send less.',
  value_cyclic: 'An argument refers to itself; pass plain JSON without cycles (see details.path).',
  value_too_deep:
    'An argument nests deeper than 64 levels; flatten it (see details.path for where).',
  invalid_value:
    'An argument holds something that is not plain JSON (a function, promise, class instance, DOM node, Date, a getter that throws…); pass plain objects, arrays, strings, numbers, booleans and null.',
  unknown_collection:
    'No handler is configured for this collection; add one to createOutboxEngine.',
  not_found: 'No row with this id exists for this owner; it may have been settled already.',
  not_blocked: 'Only blocked rows can be retried or discarded; wait for the row to settle.',
  history_unavailable:
    'Nothing to restore: the server kept no copy of what this conflict overwrote (no history, expired, or the record was deleted).',
  storage: 'IndexedDB failed on this device; the row is kept and the next flush retries.',
  row_corrupt: 'A stored row failed to parse; it is quarantined with its raw value for inspection.',
  successor_unprepared: 'The successor of a create could not be prepared; retry or discard it.',
  predecessor_receipt_unknown: 'The create this edit waits on vanished without a known receipt.',
  fingerprint_mismatch: 'The server saw this request id with other bytes: a bug; discard the row.',
  revision_conflict:
    'The server has a newer revision; resolve the conflict, then retry or discard.',
  successor_persist_failed: 'The conflict successor could not be stored; the next flush retries.',
  conflict_storm: 'Too many conflicts for one record in one flush; the next flush continues.',
  auth_required: 'No credentials are available for this owner; call setAuth and the held rows go.',
  handler_failed:
    'A collection handler threw (see details); fix it, then retry the row (it replays) or the call.',
  origin_not_allowed: 'The request URL is outside allowedOrigins; fix the handler or the config.',
  network:
    'The network failed; rows are queued and retried with backoff, and a call that needed the server (restore) can be made again.',
  timeout: 'The call did not answer in time; it is safe to call again.',
  worker_unavailable: 'No service worker answered; reload the page or check the registration.',
  upgrade_blocked: 'An older tab keeps the database open on an old version; close other tabs.',
  closed: 'This outbox connection was closed; open a new one.',
} as const;

/** A stable error code; see {@link ERROR_CODES} for what each means and how to recover. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** An error with a stable `code` and structured `details`, preserved across Comlink. */
export class OutboxError extends Error {
  override readonly name = 'OutboxError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>) {
    super(message ?? ERROR_CODES[code]);
    this.code = code;
    this.details = details;
  }

  /** The recovery hint for this error's code. */
  get hint(): string {
    return ERROR_CODES[this.code];
  }

  /** A plain, structured-clone-safe form (for postMessage). */
  toJSON(): SerializedOutboxError {
    return { name: 'OutboxError', code: this.code, message: this.message, details: this.details };
  }

  /** Rebuilds an error from {@link OutboxError.toJSON} output. */
  static fromJSON(value: SerializedOutboxError): OutboxError {
    const code = isErrorCode(value.code) ? value.code : 'storage';
    return new OutboxError(code, value.message, value.details);
  }
}

/** The wire form of an {@link OutboxError}. */
export interface SerializedOutboxError {
  name: 'OutboxError';
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
}

/** Whether a string is a known error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/** Whether an IndexedDB/DOM exception means the device ran out of storage. */
export function isQuotaError(error: unknown): boolean {
  return error instanceof Error && error.name === 'QuotaExceededError';
}
