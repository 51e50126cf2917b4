import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HEADER, PROBLEM, type ProblemType } from 'sw-outbox/wire';
import { type Answer, problemAnswer, sendAnswer, sendProblem } from './problem.ts';
import { StoreUnavailableError } from './unavailable.ts';

/** The longest path segment the router matches (Fastify's `maxParamLength`); longer is 414. */
export const MAX_PARAM_LENGTH = 100;

/** A body that is not UTF-8 JSON (400 `malformed-body`). */
export class MalformedBodyError extends Error {
  override readonly name = 'MalformedBodyError';
  readonly statusCode = 400;
}

/**
 * Fastify errors by code: each a fixed answer. Their messages are never sent, because some
 * quote the request (`FST_ERR_BAD_URL` quotes the path).
 */
const FASTIFY_ERRORS: Record<string, [number, ProblemType, string?]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, PROBLEM.bodyTooLarge],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, PROBLEM.unsupportedMediaType],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [
    400,
    PROBLEM.badRequest,
    'the body is not as long as Content-Length says',
  ],
  FST_ERR_BAD_URL: [400, PROBLEM.badRequest, 'the path is not valid percent-encoding'],
  FST_ERR_MAX_PARAM_LENGTH: [
    414,
    PROBLEM.uriTooLong,
    `a path segment may be at most ${MAX_PARAM_LENGTH} characters`,
  ],
};

/** Problem types of the other 4xx statuses Fastify or a plugin may raise. */
const CLIENT_STATUS: Record<number, ProblemType> = {
  404: PROBLEM.notFound,
  405: PROBLEM.methodNotAllowed,
  408: PROBLEM.requestTimeout,
  413: PROBLEM.bodyTooLarge,
  414: PROBLEM.uriTooLong,
  415: PROBLEM.unsupportedMediaType,
  429: PROBLEM.tooManyRequests,
  431: PROBLEM.headersTooLarge,
};

/**
 * The app's error handler, and Fastify's `frameworkErrors` (a path the router cannot decode, a
 * segment over {@link MAX_PARAM_LENGTH}): every error becomes a problem with a stable type
 * (SPEC §15). A 4xx with no type of its own is 400 `bad-request`; anything unexpected is 500
 * `internal-error`, and nothing is stored for it, so the same key may be retried.
 */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof MalformedBodyError) {
    return sendProblem(reply, 400, PROBLEM.malformedBody, { detail: error.message || undefined });
  }
  if (error instanceof StoreUnavailableError) return sendAnswer(reply, failureAnswer(error));
  const known = error.code === undefined ? undefined : FASTIFY_ERRORS[error.code];
  if (known) return sendProblem(reply, known[0], known[1], known[2] ? { detail: known[2] } : {});
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const type = CLIENT_STATUS[status];
    return type ? sendProblem(reply, status, type) : sendProblem(reply, 400, PROBLEM.badRequest);
  }
  return sendAnswer(reply, failureAnswer(error, request.log));
}

/**
 * The answer to a write that failed in the store: 503 with `Retry-After: 1` when storage is
 * busy or unreachable (SPEC §15), 500 (logged) for anything unexpected. Nothing is stored for
 * either, so the same key may be retried.
 */
export function failureAnswer(error: unknown, log?: FastifyBaseLogger): Answer {
  if (error instanceof StoreUnavailableError) {
    return problemAnswer(
      503,
      PROBLEM.unavailable,
      { detail: 'storage is busy; retry' },
      { [HEADER.retryAfter]: '1' },
    );
  }
  log?.error(error);
  return problemAnswer(500, PROBLEM.internal);
}
