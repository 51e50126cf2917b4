import { formatRevisionTag } from 'sw-outbox/wire';
import type { LedgerClaim, StoredResponse } from '../kit/ledger.ts';

/**
 * Schemaless JSON collections of the reference server (`--collection todos`): any JSON object
 * per record, kept per principal with a revision, beside the demo's `notes`. One table holds
 * every collection: `(principal, collection, id)`, the revision, the object as JSON text (kept
 * byte for byte as it was made here, so both adapters answer identical bytes), a deleted flag
 * (deleted records keep counting revisions) and times.
 */

/** A record as the API shows it: `{ id, revision, …fields }`. */
export interface DocumentRecord {
  id: string;
  revision: number;
  /** The record's own fields (never `id` or `revision`). */
  value: Record<string, unknown>;
}

/** A write of a collection's record as a route describes it. */
export type DocumentIntent =
  | { op: 'create'; collection: string; id: string; value: Record<string, unknown> }
  | {
      op: 'update';
      collection: string;
      id: string;
      ifMatch: number;
      /** An RFC 7396 merge patch: members replace, `null` removes, objects merge. */
      patch: Record<string, unknown>;
    }
  | { op: 'delete'; collection: string; id: string; ifMatch: number };

/** A write with who, which key, which request and when. */
export type DocumentCommand = LedgerClaim & DocumentIntent;

/** What a write did inside the ledger's transaction. */
export type DocumentWriteResult =
  | { kind: 'applied'; response: StoredResponse }
  | { kind: 'conflict'; current: DocumentRecord }
  | { kind: 'not-found' };

/** A store's collections (SQLite and PostgreSQL each have one, documents-*.ts). */
export interface DocumentStore<Tx = unknown> {
  /** A write inside the ledger's transaction with its client `tx` (check 3 claimed the key). */
  apply(tx: Tx, command: DocumentCommand): DocumentWriteResult | Promise<DocumentWriteResult>;
  /** A live record of the principal, or `undefined`. */
  get(principal: string, collection: string, id: string): Promise<DocumentRecord | undefined>;
  /** The principal's live records of a collection, oldest first, at most `limit`. */
  list(principal: string, collection: string, limit: number): Promise<DocumentRecord[]>;
}

/** A row as both adapters read it. */
export interface DocumentRow {
  id: string;
  revision: number;
  value: string;
  deleted: boolean | number;
}

/** The JSON body of a record: `{ "id", "revision", …fields }`. */
export function documentJson(record: DocumentRecord): string {
  return JSON.stringify({ id: record.id, revision: record.revision, ...record.value });
}

/** A stored row as a record. */
export function toDocument(row: DocumentRow): DocumentRecord {
  return { id: row.id, revision: row.revision, value: JSON.parse(row.value) };
}

/** The stored answer of an applied write: 201 for a create, 200 otherwise, `ETag` its revision. */
export function appliedDocument(
  command: Pick<LedgerClaim, 'fingerprint'>,
  status: number,
  body: string,
  revision: number,
): DocumentWriteResult {
  const response = {
    fingerprint: command.fingerprint,
    status,
    etag: formatRevisionTag(revision),
    body,
  };
  return { kind: 'applied', response };
}

/** The body of a delete: `{ id, revision, deleted: true }`, as the notes'. */
export function deletedDocumentJson(id: string, revision: number): string {
  return JSON.stringify({ id, revision, deleted: true });
}

/** RFC 7396 JSON merge patch of an object by an object. */
export function mergePatch(
  target: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const result: Record<string, unknown> = { ...target };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else if (isObject(value)) {
      const current = result[name];
      result[name] = mergePatch(isObject(current) ? current : {}, value);
    } else result[name] = value;
  }
  return result;
}

/** A JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
