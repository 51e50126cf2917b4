import { STATUS_CODES } from 'node:http';
import type { FastifyReply } from 'fastify';
import {
  type BatchItemAnswer,
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
  [PROBLEM.batchMalformed]: 'The batch is not { "items": [ … ] } of well-formed items',
  [PROBLEM.bodyTooLarge]: 'The body is too large',
  [PROBLEM.requestTimeout]: 'The request did not arrive in time',
  [PROBLEM.uriTooLong]: 'The path is too long',
  [PROBLEM.expectationFailed]: 'Only Expect: 100-continue is supported',
  [PROBLEM.headersTooLarge]: 'The request headers are too large',
  [PROBLEM.unsupportedMediaType]: 'The body must be application/json',
  [PROBLEM.authRequired]: 'Authentication is required',
  [PROBLEM.tokenExpired]: 'The token has expired',
  [PROBLEM.forbidden]: 'Forbidden',
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

/** The media type header value of every problem answer. */
export const PROBLEM_CONTENT_TYPE_HEADER = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

/**
 * A complete HTTP/1.1 problem response as bytes for a socket the HTTP parser gave up on (SPEC
 * §15: even an answer Node writes itself is a problem). It always closes the connection: after a
 * parse error nothing else on the socket can be trusted.
 */
export function rawProblemResponse(
  status: number,
  type: ProblemType,
  extras: ProblemExtras = {},
): string {
  const body = JSON.stringify(problemBody(status, type, extras));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    `Content-Type: ${PROBLEM_CONTENT_TYPE_HEADER}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * An answer as a value: status, the headers it carries and the exact body text. The write
 * pipeline makes one per request; a request alone sends it ({@link sendAnswer}), a batch sends
 * it as one item (SPEC §15.1), so both answer with the same bytes.
 */
export type Answer = BatchItemAnswer;

/** The media type header value of every JSON answer that is not a problem. */
export const JSON_CONTENT_TYPE_HEADER = 'application/json; charset=utf-8';

/** A problem answer as a value (see {@link sendProblem}); `headers` go with it. */
export function problemAnswer(
  status: number,
  type: ProblemType,
  extras: ProblemExtras = {},
  headers: Record<string, string> = {},
): Answer {
  return {
    status,
    headers: { ...headers, 'content-type': PROBLEM_CONTENT_TYPE_HEADER },
    body: JSON.stringify(problemBody(status, type, extras)),
  };
}

/** Sends an answer value on a reply. */
export function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  reply.code(answer.status);
  for (const name in answer.headers) reply.header(name, answer.headers[name]);
  return reply.send(answer.body);
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
    .header('content-type', PROBLEM_CONTENT_TYPE_HEADER)
    .send(JSON.stringify(problemBody(status, type, extras)));
}
