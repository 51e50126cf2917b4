import { PAGE_ERROR_CODES } from './page-error-codes.ts';

/** What one error code means for the engine and the app, beside its hint. */
export interface ErrorCodeTraits {
  /** How to recover, in one line. */
  hint: string;
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

type PageCode = keyof typeof PAGE_ERROR_CODES;

/** The page's own codes, with the traits of the worker's table (none beyond the hint). */
const PAGE_TRAITS = Object.fromEntries(
  Object.entries(PAGE_ERROR_CODES).map(([code, hint]) => [code, { hint }]),
) as { [K in PageCode]: { hint: (typeof PAGE_ERROR_CODES)[K] } };

/**
 * Every error code that crosses a boundary (page API, row quarantine, a row's `lastErrorCode`,
 * telemetry), each with its traits: the one table of what a code means (SPEC §13, STYLE). The
 * page's own codes keep their hints in `page-error-codes.ts` so the page loads no more than
 * those (SPEC §22).
 */
export const ERROR_CODE_TRAITS = {
  ...PAGE_TRAITS,
  // As a row's `lastErrorCode`, a transport timeout: the request got no answer.
  timeout: { hint: PAGE_ERROR_CODES.timeout, unanswered: true },
  invalid_intent: { hint: PAGE_ERROR_CODES.invalid_intent, permanent: true },
  invalid_id: { hint: PAGE_ERROR_CODES.invalid_id, permanent: true },
  target_deleted: {
    hint: 'A delete for this record is already queued; the record cannot be edited again.',
    permanent: true,
  },
  owner_mismatch: {
    hint: 'This connection serves another owner; open a new connectOutbox for this owner.',
  },
  quota_exceeded: {
    hint: 'The browser refused to store more data; free space or discard rows, then retry.',
  },
  row_too_large: {
    hint: 'The stored row (payload, meta and request) would exceed maxRowBytes; send less.',
    permanent: true,
  },
  unknown_collection: {
    hint: 'No handler is configured for this collection; add one to createOutboxEngine.',
  },
  not_found: {
    hint: 'No row with this id exists for this owner; it may have been settled already.',
  },
  not_blocked: {
    hint: 'Only blocked rows can be retried or discarded; wait for the row to settle.',
  },
  history_unavailable: {
    hint: 'The server kept no copy of what this conflict overwrote; there is nothing to restore.',
  },
  storage: { hint: 'IndexedDB failed on this device; the row is kept and the next flush retries.' },
  row_corrupt: {
    hint: 'A stored row failed to parse; it is quarantined with its raw value for inspection.',
  },
  successor_unprepared: {
    hint: 'The successor of a create could not be prepared; retry or discard it.',
    appliedNothing: true,
  },
  predecessor_receipt_unknown: {
    hint: 'The create this edit waits on vanished without a known receipt.',
    appliedNothing: true,
  },
  fingerprint_mismatch: {
    hint: 'The server saw this request id with other bytes: a bug; discard the row.',
    appliedNothing: true,
  },
  revision_conflict: {
    hint: 'The server has a newer revision; resolve the conflict, then retry or discard.',
    appliedNothing: true,
  },
  successor_persist_failed: {
    hint: 'The conflict successor could not be stored; the next flush retries.',
    appliedNothing: true,
  },
  conflict_storm: {
    hint: 'Too many conflicts for one record in one flush; the next flush continues.',
    appliedNothing: true,
  },
  auth_required: {
    hint: 'No credentials are available for this owner; call setAuth and the held rows go.',
    appliedNothing: true,
  },
  handler_failed: {
    hint: 'A collection handler threw (see details); fix it, then retry the row (it replays).',
  },
  origin_not_allowed: {
    hint: 'The request URL is outside allowedOrigins; fix the handler or the config.',
    appliedNothing: true,
  },
  network: {
    hint: 'The network failed; rows are retried with backoff, and a call (restore) can be made again.',
    unanswered: true,
  },
  upgrade_blocked: {
    hint: 'An older tab keeps the database open on an old version; close other tabs.',
  },
  flush_stopped: {
    hint: 'The flush stopped (offline, storage) before this claimed row was sent; it goes next flush.',
    appliedNothing: true,
    unanswered: true,
  },
  lease_lapsed: {
    hint: "The claim's lease ran too short to send the request; the row goes next flush.",
    appliedNothing: true,
    unanswered: true,
  },
} as const satisfies Record<string, ErrorCodeTraits>;

/** A stable error code; see {@link ERROR_CODES} for what each means and how to recover. */
export type ErrorCode = keyof typeof ERROR_CODE_TRAITS;

/** Every error code with its one-line hint on how to recover (from {@link ERROR_CODE_TRAITS}). */
export const ERROR_CODES = Object.fromEntries(
  Object.entries(ERROR_CODE_TRAITS).map(([code, traits]) => [code, traits.hint]),
) as { readonly [K in ErrorCode]: (typeof ERROR_CODE_TRAITS)[K]['hint'] };

/** Whether a string is a known error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODE_TRAITS, code);
}

/** The traits of a code, or undefined for one the table does not know (`http_<status>`, an app's). */
export function traitsOf(code: string): ErrorCodeTraits | undefined {
  return Object.hasOwn(ERROR_CODE_TRAITS, code)
    ? (ERROR_CODE_TRAITS as Record<string, ErrorCodeTraits>)[code]
    : undefined;
}
