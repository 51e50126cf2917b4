import { formatRevisionTag } from 'sw-outbox/wire';
import type { Defer, LedgerStore, StoredResponse } from '../kit/ledger.ts';
import type { Answer } from '../problem.ts';
import type { DocumentStore } from './documents.ts';
import { StoreUnavailableError } from '../unavailable.ts';

/**
 * The storage port of the reference server (SPEC §15): the demo's `notes` collection and the
 * schemaless collections beside the kit's idempotency ledger (server/kit/) in the same database,
 * behind one interface so SQLite and PostgreSQL pass one conformance suite.
 *
 * The ledger is the kit's: keyed by `(principal, key)`, it holds only completed, successful
 * responses — nothing is stored for a failed attempt, a 4xx, a 401/429/503 or a 500 (SPEC §15),
 * so the same key can always be retried after a failure. A write runs inside the ledger's
 * transaction (`ledger.transact`, check 3) through `applyWrite`, so the note and the key's entry
 * commit together or not at all.
 */

export type { StoredResponse } from '../kit/ledger.ts';
export { StoreUnavailableError } from '../unavailable.ts';

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

/** What a write did inside the ledger's transaction: the answer to store, or why it did not apply. */
export type NoteWriteResult =
  | { kind: 'applied'; response: StoredResponse }
  | { kind: 'conflict'; current: NoteRecord }
  | { kind: 'not-found' };

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
export interface ServerStore<Tx = unknown> {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * The kit's idempotency ledger in this store's database (`sqliteLedger`, `postgresLedger`):
   * the reference server's kit claims keys and stores answers through it.
   */
  readonly ledger: LedgerStore<Tx>;
  /**
   * A note write inside the ledger's transaction, with its client `tx`: the revision
   * compare-and-set, the history of the version it replaces (SPEC §10.1), the answer to store.
   * Synchronous on SQLite (better-sqlite3 is).
   */
  applyWrite(
    tx: Tx,
    command: WriteCommand,
    defer?: Defer,
  ): NoteWriteResult | Promise<NoteWriteResult>;
  /** The schemaless JSON collections (`--collection`, store/documents.ts), in the same database. */
  readonly documents: DocumentStore<Tx>;
  /** Checks 1 and 2 of SPEC §15: the completed response for a key, if any (the ledger's). */
  lookup(principal: string, key: string): Promise<StoredResponse | undefined>;
  /** Checks 1 and 2 for the keys of a batch (SPEC §15.1), by key (the ledger's). */
  lookupMany(principal: string, keys: readonly string[]): Promise<Map<string, StoredResponse>>;
  /**
   * Check 3 and the write, in one transaction (SPEC §15): {@link applyWrite} through the
   * ledger, for callers outside HTTP (see {@link writeThroughLedger}).
   */
  write(command: WriteCommand): Promise<WriteOutcome>;
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

/**
 * The answer a write stores: `value` as its JSON body, its revision as the `ETag`. Bodies are
 * made here for both adapters, so both send identical bytes.
 */
export function applied(
  command: WriteIdentity,
  status: number,
  value: { id: string; revision: number; [field: string]: unknown },
): NoteWriteResult {
  const response = {
    fingerprint: command.fingerprint,
    status,
    etag: formatRevisionTag(value.revision),
    body: JSON.stringify(value),
  };
  return { kind: 'applied', response };
}

/** A refusal inside the transaction: rolled back by the ledger, never stored. */
const REFUSED: Answer = { status: 409, headers: {}, body: '' };

/**
 * {@link ServerStore.write}: the store's `applyWrite` inside `ledger.transact`. A conflict or a
 * missing note rolls the transaction back (nothing stored); a key another transaction holds past
 * the ledger's wait is busy (StoreUnavailableError).
 */
export async function writeThroughLedger<Tx>(
  store: Pick<ServerStore<Tx>, 'ledger' | 'applyWrite'>,
  command: WriteCommand,
): Promise<WriteOutcome> {
  const { principal, key, fingerprint, now } = command;
  let refusal: WriteOutcome | undefined;
  const outcome = await store.ledger.transact({ principal, key, fingerprint, now }, (tx, defer) => {
    const settle = (result: NoteWriteResult): Answer => {
      if (result.kind !== 'applied') {
        refusal = result;
        return REFUSED;
      }
      const { status, etag, body } = result.response;
      return { status, headers: etag === null ? {} : { etag }, body };
    };
    const result = store.applyWrite(tx, command, defer);
    return result instanceof Promise ? result.then(settle) : settle(result);
  });
  switch (outcome.kind) {
    case 'applied':
    case 'completed':
      return outcome;
    case 'refused':
      return refusal!;
    case 'in-progress':
      throw new StoreUnavailableError('another transaction holds the key');
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
