import { PAGE_ERROR_CODES } from './page-error-codes.ts';

/**
 * Every error code that crosses a boundary (page API, row quarantine, telemetry), each with a
 * one-line hint on how to recover. Codes are stable snake_case strings (SPEC §13, STYLE).
 */
export const ERROR_CODES = {
  ...PAGE_ERROR_CODES,
  target_deleted: 'A delete for this record is already queued; the record cannot be edited again.',
  owner_mismatch: 'This connection serves another owner; open a new connectOutbox for this owner.',
  quota_exceeded: 'The browser refused to store more data; free space or discard rows, then retry.',
  row_too_large: 'The stored row (payload, meta and request) would exceed maxRowBytes; send less.',
  unknown_collection:
    'No handler is configured for this collection; add one to createOutboxEngine.',
  not_found: 'No row with this id exists for this owner; it may have been settled already.',
  not_blocked: 'Only blocked rows can be retried or discarded; wait for the row to settle.',
  history_unavailable:
    'The server kept no copy of what this conflict overwrote; there is nothing to restore.',
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
    'A collection handler threw (see details); fix it, then retry the row (it replays).',
  origin_not_allowed: 'The request URL is outside allowedOrigins; fix the handler or the config.',
  network:
    'The network failed; rows are retried with backoff, and a call (restore) can be made again.',
  upgrade_blocked: 'An older tab keeps the database open on an old version; close other tabs.',
} as const;

/** A stable error code; see {@link ERROR_CODES} for what each means and how to recover. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether a string is a known error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
