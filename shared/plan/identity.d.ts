import type { PreparedRequest } from '../model/handler.ts';
import type { RowRequest } from '../model/row.ts';
/**
 * Request identity (SPEC §9): an id made once before the first attempt and reused on every
 * retry, and a fingerprint of the exact bytes, so the server can tell a replay from a misuse.
 */
export { isValidId, newRequestId } from './request-id.ts';
/** SHA-256 hex of the canonical JSON of `{ method, url, body, baseRevision }`. */
export declare function fingerprintOf(request: PreparedRequest, baseRevision: number | null | undefined): string;
/** `Content-Digest` (RFC 9530) of body bytes, or of a string's UTF-8 bytes. */
export declare function contentDigest(body: Uint8Array | string): string;
/**
 * The stored request for an intent: the handler's bytes plus identity headers. Auth is never
 * part of it (§2); the transport adds credentials at send time.
 */
export declare function buildRowRequest(prepared: PreparedRequest, requestId: string, baseRevision: number | null | undefined): RowRequest;
