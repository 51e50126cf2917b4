import { createHash } from 'node:crypto';
import { formatSha256Digest } from 'sw-outbox/wire';

/**
 * Request fingerprints on the server (SPEC §9, §15). The ledger compares a retry with the request
 * the key was first used for: same method, same path, same `If-Match`, same body digest. Using
 * the body's `Content-Digest` lets check 1 compare before the body is read.
 */

/** `Content-Digest` member for body bytes; node:crypto because this runs on every write. */
export function sha256Digest(body: Uint8Array): string {
  return formatSha256Digest(createHash('sha256').update(body).digest());
}

/** The digest of an absent body (a DELETE usually has none). */
export const EMPTY_BODY_DIGEST = sha256Digest(new Uint8Array(0));

/** How a `Content-Digest` header parsed. Other algorithms are ignored, as RFC 9530 allows. */
export type DeclaredDigest =
  | { kind: 'absent' }
  | { kind: 'sha-256'; digest: string }
  | { kind: 'malformed' };

const MEMBER = /^\s*([a-z][a-z0-9_.*-]*)\s*=\s*:([A-Za-z0-9+/=]*):\s*(?:;.*)?$/;
const SHA256_BASE64 = /^[A-Za-z0-9+/]{43}=$/;

/** Parses `Content-Digest` (an RFC 8941 dictionary) and returns its `sha-256` member. */
export function parseContentDigest(value: string | string[] | undefined): DeclaredDigest {
  if (value === undefined) return { kind: 'absent' };
  const text = Array.isArray(value) ? value.join(',') : value;
  let found: DeclaredDigest = { kind: 'absent' };
  for (const member of text.split(',')) {
    if (member.trim() === '') continue;
    const match = MEMBER.exec(member);
    if (!match) return { kind: 'malformed' };
    if (match[1] !== 'sha-256') continue;
    if (!SHA256_BASE64.test(match[2]!)) return { kind: 'malformed' };
    found = { kind: 'sha-256', digest: `sha-256=:${match[2]}:` };
  }
  return found;
}

/** The fingerprint a ledger entry is stored and compared with. */
export function requestFingerprint(
  method: string,
  url: string,
  ifMatch: string | undefined,
  digest: string,
): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return `${method} ${path}\n${ifMatch?.trim() ?? ''}\n${digest}`;
}
