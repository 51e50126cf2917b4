/**
 * The storage port of the reference server (SPEC §15): the idempotency ledger and the demo's
 * `notes` collection, behind one interface so SQLite and PostgreSQL pass one conformance suite.
 *
 * The ledger is keyed by `(principal, key)` and holds only completed, successful responses:
 * nothing is stored for a failed attempt, a 4xx, a 401/429/503 or a 500 (SPEC §15), so the same
 * key can always be retried after a failure.
 */

/** A completed request as the ledger keeps it; `body` is the exact bytes that were sent. */
export interface StoredResponse {
  /** The request fingerprint the key was first used with (method, path, `If-Match`, digest). */
  fingerprint: string;
  status: number;
  /** The `ETag` sent with the response, replayed with it. */
  etag: string | null;
  /** The JSON body text, replayed byte for byte. */
  body: string;
}

/** A note as the API shows it. */
export interface NoteRecord {
  id: string;
  revision: number;
  title: string;
  body: string;
}

/**
 * A version of a note as it was before a write replaced it (SPEC §10.1): kept per principal for
 * every update and delete, in the same transaction as the write that superseded it.
 */
export interface NoteVersion {
  id: string;
  revision: number;
  title: string;
  body: string;
  /** The idempotency key of the write that superseded it; null for an edit outside the ledger. */
  supersededBy: string | null;
  /** When it was superseded (milliseconds since the epoch); retention counts from here. */
  supersededAt: number;
}

/** Fields a `PATCH` may change; an absent field is left as it is. */
export interface NotePatch {
  title?: string;
  body?: string;
}

/** What every write carries: who, which ledger key, which request, and when. */
export interface WriteIdentity {
  principal: string;
  key: string;
  fingerprint: string;
  /** Milliseconds since the epoch; ledger retention counts from here. */
  now: number;
}

/** A write as a route describes it: what to change, at which revision. */
export type WriteIntent =
  | { op: 'create'; id: string; title: string; body: string }
  | { op: 'update'; id: string; ifMatch: number; patch: NotePatch }
  | { op: 'delete'; id: string; ifMatch: number };

/** One idempotent write: the key claim, the revision compare-and-set and the response store. */
export type WriteCommand = WriteIdentity & WriteIntent;

/**
 * How a write ended. `completed` means the key was already in the ledger (an earlier attempt or
 * a racing copy won): nothing was written, and the caller compares fingerprints to decide
 * between a replay and `idempotency-key-reused`.
 */
export type WriteOutcome =
  | { kind: 'applied'; response: StoredResponse }
  | { kind: 'completed'; response: StoredResponse }
  | { kind: 'conflict'; current: NoteRecord }
  | { kind: 'not-found' };

/** Counts for tests and the demo's inspector (`GET /__stats`). */
export interface StoreSummary {
  /** Live notes. */
  notes: number;
  /** Deleted notes (kept as tombstones so their revision keeps counting). */
  deleted: number;
  /** Sum of all revisions: every create, update and delete adds exactly one. */
  revisionSum: number;
  /** Ledger entries (receipts). */
  receipts: number;
}

/** The storage port. Every method may throw {@link StoreUnavailableError} for transient faults. */
export interface ServerStore {
  readonly kind: 'sqlite' | 'postgres';
  /** Checks 1 and 2 of SPEC §15: the completed response for a key, if any. */
  lookup(principal: string, key: string): Promise<StoredResponse | undefined>;
  /** Check 3 and the write, in one transaction (SPEC §15). */
  write(command: WriteCommand): Promise<WriteOutcome>;
  /**
   * Checks 1 and 2 for the items of a batch (SPEC §15.1): the completed responses of those of
   * `keys` that are in the ledger, by key.
   */
  lookupMany(principal: string, keys: readonly string[]): Promise<Map<string, StoredResponse>>;
  /**
   * The writes of a batch (SPEC §15.1), each exactly as {@link write} would do it and in order
   * (a write sees the effects of those before it), grouped into as few transactions as the
   * adapter can without letting one write's failure undo another's: one settled result per
   * command, in order. Rejects as a whole only when storage is unavailable before anything of it
   * could be kept.
   */
  writeMany(commands: readonly WriteCommand[]): Promise<Array<PromiseSettledResult<WriteOutcome>>>;
  getNote(principal: string, id: string): Promise<NoteRecord | undefined>;
  /**
   * The version of a note that a write superseded at `revision` (SPEC §10.1), or undefined when
   * the principal has no such note, the revision was never superseded or its history expired.
   */
  getVersion(principal: string, id: string, revision: number): Promise<NoteVersion | undefined>;
  /** The principal's live notes, oldest first, at most `limit`. */
  listNotes(principal: string, limit: number): Promise<NoteRecord[]>;
  /**
   * An edit by "another device" (fault injection): bumps the revision without a ledger entry,
   * keeping the version it replaced (superseded by no key). `undefined` when the note does not
   * exist or is deleted.
   */
  editNote(
    principal: string,
    id: string,
    patch: NotePatch,
    now: number,
  ): Promise<NoteRecord | undefined>;
  /**
   * Deletes at most `batchSize` ledger entries created before `cutoff`, and at most `batchSize`
   * note versions superseded before it (history is kept exactly as long as the ledger); returns
   * how many rows went, both kinds together.
   */
  sweepExpired(cutoff: number, batchSize: number): Promise<number>;
  /** Counts for one principal, or for everyone. */
  summary(principal?: string): Promise<StoreSummary>;
  close(): Promise<void>;
}

/** The ledger or the database is busy or unreachable; the client should retry (503). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The JSON body of a note response; one place so every adapter sends identical bytes. */
export function noteJson(note: NoteRecord): string {
  return JSON.stringify({
    id: note.id,
    revision: note.revision,
    title: note.title,
    body: note.body,
  });
}

/**
 * The JSON body of `GET /api/notes/:id/history/:revision` (the wire's `RecordVersionResponse`):
 * `value` holds the fields a `PATCH` writes, so a client restores the version by sending it.
 * A version not yet superseded (the current one) has `supersededBy` and `supersededAt` null.
 */
export function noteVersionJson(
  version: Omit<NoteVersion, 'supersededAt'> & { supersededAt: number | null },
): string {
  return JSON.stringify({
    id: version.id,
    revision: version.revision,
    value: { title: version.title, body: version.body },
    supersededBy: version.supersededBy,
    supersededAt: version.supersededAt,
  });
}

/** The JSON body of a delete response (SPEC §15: `{ id, revision, deleted: true }`). */
export function deletedJson(id: string, revision: number): string {
  return JSON.stringify({ id, revision, deleted: true });
}
