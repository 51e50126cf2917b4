import type { IdSource } from '../model/ports.ts';
/**
 * Request ids (SPEC §9), apart from the fingerprints of `identity.ts`: the page makes ids too, and
 * this file keeps it from bundling SHA-256.
 */
/** Whether an id is acceptable to the engine (`^[A-Za-z0-9_-]{8,80}$`). */
export declare function isValidId(id: string): boolean;
/** A new request id `<prefix>-<24 lowercase hex>`; the prefix is the collection or kind. */
export declare function newRequestId(ids: IdSource, prefix: string): string;
