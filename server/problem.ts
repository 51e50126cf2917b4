import type { FastifyReply } from 'fastify';
import {
  PROBLEM,
  PROBLEM_CONTENT_TYPE,
  type ProblemBody,
  type ProblemType,
} from 'sw-outbox/wire';

const TITLES: Record<ProblemType, string> = {
  [PROBLEM.keyMissing]: 'Idempotency-Key is required on writes',
  [PROBLEM.keyMalformed]: 'Idempotency-Key is malformed',
  [PROBLEM.keyReused]: 'Idempotency-Key was already used for another request',
  [PROBLEM.inProgress]: 'A request with this Idempotency-Key is in progress',
  [PROBLEM.revisionConflict]: 'The revision in If-Match is not the current one',
  [PROBLEM.preconditionRequired]: 'If-Match is required',
  [PROBLEM.ifMatchMalformed]: 'If-Match is malformed',
  [PROBLEM.digestMismatch]: 'Content-Digest does not match the body',
  [PROBLEM.validationFailed]: 'The request failed validation',
  [PROBLEM.badRequest]: 'Bad request',
  [PROBLEM.malformedBody]: 'The body is not valid JSON',
  [PROBLEM.bodyTooLarge]: 'The body is too large',
  [PROBLEM.unsupportedMediaType]: 'The body must be application/json',
  [PROBLEM.authRequired]: 'Authentication is required',
  [PROBLEM.tokenExpired]: 'The token has expired',
  [PROBLEM.notFound]: 'Not found',
  [PROBLEM.methodNotAllowed]: 'Method not allowed',
  [PROBLEM.tooManyRequests]: 'Too many requests',
  [PROBLEM.unavailable]: 'Service unavailable',
  [PROBLEM.internal]: 'Internal server error',
};

/** Extension members and detail of a problem answer. */
export type ProblemExtras = Omit<Partial<ProblemBody>, 'type' | 'title' | 'status'>;

/** A problem body for `type` (RFC 9457), with a fixed title per type. */
export function problemBody(
  status: number,
  type: ProblemType,
  extras: ProblemExtras = {},
): ProblemBody {
  return { type, title: TITLES[type], status, ...extras };
}

/**
 * Sends an `application/problem+json` answer. Every error of the protocol goes through here so
 * that each has a stable `type` (SPEC §15). Returns the reply for Fastify's async hooks.
 */
export function sendProblem(
  reply: FastifyReply,
  status: number,
  type: ProblemType,
  extras: ProblemExtras = {},
): FastifyReply {
  return reply
    .code(status)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify(problemBody(status, type, extras)));
}
