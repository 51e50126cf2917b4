import {
  formatRevisionTag,
  HEADER,
  PROBLEM,
  type ProblemType,
  type RecordVersionResponse,
} from 'sw-outbox/wire';
import {
  type Answer,
  JSON_CONTENT_TYPE_HEADER,
  type ProblemExtras,
  problemAnswer,
} from '../problem.ts';

/**
 * Answers a write handler returns (SPEC §15). A success (2xx) is what the ledger keeps and
 * replays byte for byte, so it is JSON made here; anything else is a refusal, never stored, and
 * rolls the handler's writes back.
 */

/** Options of {@link json}. */
export interface JsonOptions {
  /** The record's revision after the write (sent as `ETag: "<revision>"`), or a whole tag. */
  etag?: number | string;
}

/** A JSON answer: `status` (201 for a create, 200 otherwise) and `value` as its body. */
export function json(status: number, value: unknown, options: JsonOptions = {}): Answer {
  const headers: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE_HEADER };
  if (options.etag !== undefined) {
    headers[HEADER.etag] =
      typeof options.etag === 'number' ? formatRevisionTag(options.etag) : options.etag;
  }
  return { status, headers, body: JSON.stringify(value) };
}

/** An RFC 9457 problem answer with one of the protocol's types (never stored). */
export function problem(
  status: number,
  type: ProblemType,
  extras: ProblemExtras = {},
  headers: Record<string, string> = {},
): Answer {
  return problemAnswer(status, type, extras, headers);
}

/** 404 `not-found`: the record the write names does not exist (or is not the caller's). */
export function notFound(detail = 'no such record'): Answer {
  return problemAnswer(404, PROBLEM.notFound, { detail });
}

/** What a route's `validate` returns: the validated input, or the answer refusing it. */
export type Validation<V> = { ok: true; value: V } | { ok: false; answer: Answer };

/** A validated input. */
export function valid<V>(value: V): Validation<V> {
  return { ok: true, value };
}

/** 422 `validation-failed`, one issue per field. */
export function invalid(
  detail: string,
  issues: ReadonlyArray<{ path: string; message: string }> = [],
): Validation<never> {
  return { ok: false, answer: problemAnswer(422, PROBLEM.validationFailed, { detail, issues }) };
}

/** What {@link revisionConflict} says about the record. */
export interface ConflictOptions {
  /** The revision the record is at now. */
  currentRevision: number;
  /**
   * Where the version a resend would overwrite can be read (SPEC §10.1), for a server that keeps
   * history: `GET <href>` answers a {@link RecordVersionResponse}. Omit when it keeps none.
   */
  historyHref?: string;
  /** The server copy, when the app sends it (SPEC §10 evidence). */
  current?: unknown;
}

/**
 * 412 `revision-conflict` (SPEC §10, §10.1): the `If-Match` revision is not the current one.
 * Carries `currentRevision`, `ETag` of the current revision, and `history` when the server
 * keeps the version a resend would overwrite.
 */
export function revisionConflict(options: ConflictOptions): Answer {
  const { currentRevision } = options;
  return problemAnswer(
    412,
    PROBLEM.revisionConflict,
    {
      detail: `the record is at revision ${currentRevision}`,
      currentRevision,
      ...(options.current === undefined ? {} : { current: options.current }),
      ...(options.historyHref === undefined
        ? {}
        : { history: { revision: currentRevision, href: options.historyHref } }),
    },
    { [HEADER.etag]: formatRevisionTag(currentRevision) },
  );
}

/** `GET <collection>/<id>/history/<revision>` (SPEC §10.1): one version of a record, 200. */
export function recordVersion(version: RecordVersionResponse): Answer {
  return json(200, {
    id: version.id,
    revision: version.revision,
    value: version.value,
    supersededBy: version.supersededBy,
    supersededAt: version.supersededAt,
  });
}
