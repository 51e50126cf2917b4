import type { PreparedRequest } from './handler.ts';
import { canonicalJson } from './json.ts';
import { sha256, sha256Hex } from './sha256.ts';

/**
 * The digests of SPEC §9 and §15, in one place the planners and the wire layer both reach: a
 * request's fingerprint and a body's `Content-Digest`.
 */

const encoder = new TextEncoder();

/** SHA-256 hex of the canonical JSON of `{ method, url, body, baseRevision }`. */
export function fingerprintOf(
  request: PreparedRequest,
  baseRevision: number | null | undefined,
): string {
  return sha256Hex(
    canonicalJson({
      method: request.method,
      url: request.url,
      body: request.body,
      baseRevision: baseRevision ?? null,
    }),
  );
}

/** Formats raw SHA-256 bytes as a `Content-Digest` member (RFC 9530): `sha-256=:<base64>:`. */
export function formatSha256Digest(digest: Uint8Array): string {
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  return `sha-256=:${btoa(binary)}:`;
}

/** `Content-Digest` (RFC 9530) of body bytes, or of a string's UTF-8 bytes. */
export function contentDigest(body: Uint8Array | string): string {
  return formatSha256Digest(sha256(typeof body === 'string' ? encoder.encode(body) : body));
}
