import type { Json } from './json.ts';

/** What a conflict overwrote, as the server keeps it (SPEC §10.1, seed 003 `historyRef`). */

/**
 * An immutable reference to the server copy a resend overwrote (SPEC §10.1, seed 003
 * `historyRef`): the version of the record at `supersededRevision`, readable only through the
 * server (`CollectionHandler.historyUrl`, `Transport.lookupHistory`). Built only from what a
 * conflict answer said; null where the server keeps no history, never a guess.
 */
export type HistoryRef = {
  kind: 'record_history';
  collection: string;
  recordId: string;
  supersededRevision: number;
  access: 'server_lookup';
};

/** One version of a record as the server keeps it (SPEC §10.1, wire `RecordVersionResponse`). */
export type RecordVersion = {
  revision: number;
  /** The record's fields as that version held them: what an update writes to restore it. */
  value: Json;
  /** The key of the write that superseded it; null for an edit outside the ledger, or current. */
  supersededBy: string | null;
  /** When it was superseded; null while it is the current version. */
  supersededAt: number | null;
};
