import { PAGE_ERROR_CODES } from './page-error-codes.ts';

/**
 * Every error code that crosses a boundary (page API, row quarantine, a row's `lastErrorCode`,
 * telemetry), each with a one-line hint on how to recover. Codes are stable snake_case strings
 * (SPEC §13, STYLE). What a code means for the engine is in {@link ERROR_CODE_TRAITS}, beside
 * it: the one home of what a code means. The page's own codes keep their hints in
 * `page-error-codes.ts`, so the page loads no more than those (SPEC §22).
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
  flush_stopped:
    'The flush stopped (offline, storage) before this claimed row was sent; it goes next flush.',
  lease_lapsed: "The claim's lease ran too short to send the request; the row goes next flush.",
  record_busy: 'An older tab sent an edit of this record first; the row goes after it.',
  retention_exceeded:
    'The server no longer remembers this request, which may have been applied; check, then retry (a new request) or discard.',
} as const;

/** A stable error code; see {@link ERROR_CODES} for what each means and how to recover. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** What an error code means for the engine and the app, beside its hint. */
export interface ErrorCodeTraits {
  /**
   * As a row's `lastErrorCode`: the attempt applied nothing on the server (SPEC §6), so the row
   * may be merged or cancelled. Every `http_4xx` but 409 `request-in-progress` says so too.
   */
  appliedNothing?: true;
  /** As a row's `lastErrorCode`: no server answered the attempt (SPEC §12 recovery). */
  unanswered?: true;
  /** The same call fails again whatever the timing: the input must change. */
  permanent?: true;
}

/** The traits of the codes that have any (the others have none). */
export const ERROR_CODE_TRAITS: { readonly [K in ErrorCode]?: ErrorCodeTraits } = {
  timeout: { unanswered: true },
  invalid_intent: { permanent: true },
  invalid_id: { permanent: true },
  target_deleted: { permanent: true },
  row_too_large: { permanent: true },
  successor_unprepared: { appliedNothing: true },
  predecessor_receipt_unknown: { appliedNothing: true },
  fingerprint_mismatch: { appliedNothing: true },
  revision_conflict: { appliedNothing: true },
  successor_persist_failed: { appliedNothing: true },
  conflict_storm: { appliedNothing: true },
  auth_required: { appliedNothing: true },
  origin_not_allowed: { appliedNothing: true },
  network: { unanswered: true },
  flush_stopped: { appliedNothing: true, unanswered: true },
  lease_lapsed: { appliedNothing: true, unanswered: true },
  record_busy: { appliedNothing: true },
  // The attempt that found the key too old sent nothing; what earlier ones left unknown stays
  // marked (`mayHaveApplied`), so the row is still never merged (§6, §15).
  retention_exceeded: { appliedNothing: true },
};

/** Whether a string is a known error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/** The traits of a code: none for one the table does not know (`http_<status>`, an app's). */
export function traitsOf(code: string): ErrorCodeTraits | undefined {
  return Object.hasOwn(ERROR_CODE_TRAITS, code) ? ERROR_CODE_TRAITS[code as ErrorCode] : undefined;
}
