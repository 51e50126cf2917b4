import { contentDigest, fingerprintOf } from '../model/digest.ts';
import type { PreparedRequest } from '../model/handler.ts';
import { formatIdempotencyKey, HEADER } from '../model/headers.ts';
import { isHeaderName, isSendableHeader } from '../model/http-header.ts';
import type { RowRequest } from '../model/row.ts';

/**
 * Request identity (SPEC §9): an id made once before the first attempt and reused on every
 * retry, and a fingerprint of the exact bytes, so the server can tell a replay from a misuse.
 */

export { isValidId, newRequestId } from './request-id.ts';

/**
 * The stored request for an intent: the handler's bytes plus identity headers. Auth is never
 * part of it (§2); the transport adds credentials at send time. Throws for a header no request
 * can carry (a NUL, CR or LF, a character past U+00FF, a name that is not a token): `fetch`
 * would refuse it on every attempt, so the intent is refused before it is stored.
 */
export function buildRowRequest(
  prepared: PreparedRequest,
  requestId: string,
  baseRevision: number | null | undefined,
): RowRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(prepared.headers)) {
    const lower = name.toLowerCase();
    if (lower === 'authorization' || lower === 'cookie') continue;
    if (typeof value !== 'string' || !isSendableHeader(lower, value))
      throw new TypeError(
        `header ${JSON.stringify(name)} cannot be sent: a name is a token and a value holds no NUL, CR, LF or character past U+00FF`,
      );
    headers[lower] = value;
  }
  const custom = prepared.idempotencyHeader;
  const keyHeader = custom === undefined ? HEADER.idempotencyKey : (custom?.toLowerCase() ?? null);
  if (keyHeader !== null) {
    if (!isHeaderName(keyHeader))
      throw new TypeError(`idempotencyHeader ${JSON.stringify(custom)} is not a header name`);
    headers[keyHeader] = formatIdempotencyKey(requestId);
    if (prepared.body !== null) headers[HEADER.contentDigest] = contentDigest(prepared.body);
  }
  return {
    requestId,
    fingerprint: fingerprintOf(prepared, baseRevision),
    method: prepared.method,
    url: prepared.url,
    headers,
    body: prepared.body,
    // Stored only when not the default, so the transport adds no `Idempotency-Key` of its own.
    ...(custom === undefined ? {} : { keyHeader }),
  };
}
