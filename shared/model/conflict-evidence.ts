import type { HistoryRef } from './history.ts';
import type { Json } from './json.ts';
import type { RowRequest } from './row.ts';

/** The evidence a revision conflict leaves on its successor row (SPEC §10, seed 003). */

/** One request of the lineage: identity and the revision it was made from. */
export type ConflictPredecessor = {
  requestId: string;
  /**
   * The row's id where it is not `requestId`: a row re-issued under a new key past the server's
   * retention (§15) keeps its id, and the rows that wait on it name it by id (§6, §10).
   */
  rowId?: string;
  fingerprint: string;
  baseRevision: number | null;
  recordedAt: number;
  /** The original bytes, kept verbatim. */
  request: RowRequest;
};

/** Where a copy of the record stands; availability is typed, never flattened into a string. */
export type RemoteCopy =
  | { revisionOnly: number }
  | { snapshot: number; value: Json }
  | { absent: string };

/** The `conflict` field of a row (SPEC §10): what a resend overwrote, and how it is known. */
export type ConflictEvidence = {
  version: 1;
  /** The user's original request (the first in the lineage). */
  predecessor: ConflictPredecessor;
  /** Intermediate successors that conflicted in turn, oldest first. */
  lineage: ConflictPredecessor[];
  failure: { kind: 'revision_mismatch'; currentRevision: number | null; status: number };
  basis: 'current_revision_only' | 'server_detail';
  copy: { local: 'present'; base: { absent: 'no_copy_in_row' }; remote: RemoteCopy };
  /** The version the resend overwrites, when the server keeps history (§10.1); else null. */
  historyRef: HistoryRef | null;
  recordedAt: number;
};
