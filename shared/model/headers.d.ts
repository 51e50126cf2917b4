/**
 * The formats of the protocol's own headers (SPEC §15), in one place: the planners write them
 * into stored requests, the transport and the reference server read them.
 */
/** Header names of the protocol, lower case as HTTP/2 and Node report them. */
export declare const HEADER: {
  readonly idempotencyKey: 'idempotency-key';
  readonly contentDigest: 'content-digest';
  readonly ifMatch: 'if-match';
  readonly etag: 'etag';
  readonly replayed: 'idempotent-replayed';
  readonly retryAfter: 'retry-after';
  readonly authorization: 'authorization';
  readonly wwwAuthenticate: 'www-authenticate';
};
/** `Idempotency-Key` value for a request id: an RFC 8941 string (SPEC §15). */
export declare function formatIdempotencyKey(requestId: string): string;
/** An entity tag for a revision: `"<revision>"`, used in `ETag` and `If-Match`. */
export declare function formatRevisionTag(revision: number): string;
/** Formats raw SHA-256 bytes as a `Content-Digest` member (RFC 9530): `sha-256=:<base64>:`. */
export declare function formatSha256Digest(digest: Uint8Array): string;
