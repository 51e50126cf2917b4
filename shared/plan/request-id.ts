import { ID_PATTERN } from '../model/page-api.ts';
import type { IdSource } from '../model/ports.ts';

/**
 * Request ids (SPEC §9), apart from the fingerprints of `identity.ts`: the page makes ids too, and
 * this file keeps it from bundling SHA-256.
 */

/** Whether an id is acceptable to the engine (`^[A-Za-z0-9_-]{8,80}$`). */
export function isValidId(id: string): boolean {
  return ID_PATTERN.test(id);
}

/** A new request id `<prefix>-<24 lowercase hex>`; the prefix is the collection or kind. */
export function newRequestId(ids: IdSource, prefix: string): string {
  const clean = prefix.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 40) || 'req';
  return `${clean}-${ids.hex24()}`;
}
