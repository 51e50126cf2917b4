/**
 * The problem `type`s of SPEC §15, named once: the server answers with them, the classifier
 * reads them (§11), so the two can never drift apart.
 */

/** Media type of every error body (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Stable problem `type`s. They are relative URI references (RFC 9457 allows them); clients
 * compare the last path segment, so a server may prefix them with its own base URI.
 */
export const PROBLEM = {
  /** 400: a write without `Idempotency-Key`. */
  keyMissing: 'idempotency-key-missing',
  /** 400: `Idempotency-Key` is not an RFC 8941 string or bare id matching {@link ID_PATTERN}. */
  keyMalformed: 'idempotency-key-malformed',
  /** 422: the key was used before for a request with another fingerprint. A bug; never retry. */
  keyReused: 'idempotency-key-reused',
  /** 409: the same key is being processed right now; retry after `Retry-After`. */
  inProgress: 'request-in-progress',
  /** 412: `If-Match` names an old revision; the body carries `currentRevision`. */
  revisionConflict: 'revision-conflict',
  /** 428: an update or delete without `If-Match`. */
  preconditionRequired: 'precondition-required',
  /** 400: `If-Match` is not `"<revision>"`, or names a revision beyond {@link MAX_REVISION}. */
  ifMatchMalformed: 'if-match-malformed',
  /** 400: `Content-Digest` is malformed or does not match the body bytes. */
  digestMismatch: 'content-digest-mismatch',
  /** 422: the body or a path parameter failed validation; `issues` lists why. */
  validationFailed: 'validation-failed',
  /**
   * 400: the request is malformed in a way no other type names: not valid HTTP/1.1, no `Host`,
   * a path that is not valid percent-encoding.
   */
  badRequest: 'bad-request',
  /** 400: the body is not JSON. */
  malformedBody: 'malformed-body',
  /**
   * 400: a batch (SPEC §15.1) whose envelope is not `{ "items": [ … ] }` with each item an object
   * of `method`, `path`, `headers` and `body` of the right types. Nothing of it ran; send its
   * rows one by one.
   */
  batchMalformed: 'batch-malformed',
  /** 413: the body is larger than the server accepts. */
  bodyTooLarge: 'body-too-large',
  /** 408: the request (headers or body) did not arrive in time; the connection is closed. Retry. */
  requestTimeout: 'request-timeout',
  /** 414: the path, or one segment of it, is longer than the server accepts. */
  uriTooLong: 'uri-too-long',
  /** 417: an `Expect` other than `100-continue`. */
  expectationFailed: 'expectation-failed',
  /** 431: the request's header section is larger than the server accepts. */
  headersTooLarge: 'header-fields-too-large',
  /** 415: the body is not `application/json`. */
  unsupportedMediaType: 'unsupported-media-type',
  /** 401: no usable credentials. */
  authRequired: 'auth-required',
  /** 401: the token expired or was revoked; log in again. */
  tokenExpired: 'token-expired',
  /**
   * 403: refused whatever the credentials: a demo login from beyond loopback while the server
   * signs tokens with the public demo secret.
   */
  forbidden: 'forbidden',
  /** 404: no such resource for this principal. */
  notFound: 'not-found',
  /** 405: the route exists for another method, or the method is CONNECT (this is no proxy). */
  methodNotAllowed: 'method-not-allowed',
  /** 429: too many requests; retry after `Retry-After`. */
  tooManyRequests: 'too-many-requests',
  /** 503: temporarily unavailable (also when storage retries ran out); retry after `Retry-After`. */
  unavailable: 'service-unavailable',
  /** 500: unexpected; nothing is stored for it, so the same key may be retried. */
  internal: 'internal-error',
} as const;

/** One of the stable problem `type`s. */
export type ProblemType = (typeof PROBLEM)[keyof typeof PROBLEM];
