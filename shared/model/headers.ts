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
  /**
   * How long the server's ledger remembers a key, in seconds (SPEC §15: every API answer
   * advertises it): past it a key may be unknown again, so a row that may have been applied is
   * not resent under it.
   */
  retention: 'idempotency-retention',
} as const;

/** `Idempotency-Key` value for a request id: an RFC 8941 string (SPEC §15). */
export function formatIdempotencyKey(requestId: string): string {
  return `"${requestId}"`;
}

/** An entity tag for a revision: `"<revision>"`, used in `ETag` and `If-Match`. */
export function formatRevisionTag(revision: number): string {
  return `"${revision}"`;
}

/** The `Idempotency-Retention` value for a retention in milliseconds: whole seconds (SPEC §15). */
export function formatRetention(retentionMs: number): string {
  return String(Math.floor(retentionMs / 1000));
}

/**
 * The retention an `Idempotency-Retention` value states, in milliseconds; undefined when it is
 * absent or not a non-negative integer of seconds (a value that says nothing is not trusted).
 */
export function parseRetention(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d{1,12}\s*$/.test(value)) return undefined;
  return Number(value.trim()) * 1000;
}
