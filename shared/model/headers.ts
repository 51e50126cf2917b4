/**
 * The formats of the protocol's own headers (SPEC §15), in one place: the planners write them
 * into stored requests, the transport and the reference server read them.
 */

/** Header names of the protocol, lower case as HTTP/2 and Node report them. */
export const HEADER = {
  idempotencyKey: 'idempotency-key',
  contentDigest: 'content-digest',
  ifMatch: 'if-match',
  etag: 'etag',
  replayed: 'idempotent-replayed',
  retryAfter: 'retry-after',
  authorization: 'authorization',
  wwwAuthenticate: 'www-authenticate',
  link: 'link',
} as const;

/** `Idempotency-Key` value for a request id: an RFC 8941 string (SPEC §15). */
export function formatIdempotencyKey(requestId: string): string {
  return `"${requestId}"`;
}

/** An entity tag for a revision: `"<revision>"`, used in `ETag` and `If-Match`. */
export function formatRevisionTag(revision: number): string {
  return `"${revision}"`;
}
