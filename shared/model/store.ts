import type { HistoryRef } from './history.ts';
import type { Json } from './json.ts';

/**
 * The storage port (SPEC §3): one atomic primitive, `replace`, plus reads. Values come back raw
 * (`unknown`) so a row that no longer parses can still be observed, compared and quarantined.
 */

/** The key that marks an {@link UnreadableValue}: no row writer uses it. */
export const UNREADABLE = 'sw-outbox:unreadable';

/**
 * What a store hands back for a stored row it has but cannot read: IndexedDB gives a service
 * worker `null` for a value it cannot deserialize there (Chromium does for one nested about a
 * thousand levels deep). It carries the row's key, and its owner when the read was by owner, so
 * the row can still be observed and quarantined (G7). As an expectation in `replace` it stands
 * for "that same unreadable value".
 */
export interface UnreadableValue {
  [UNREADABLE]: true;
  id: unknown;
  owner?: string;
  /** The queue position, when the read was in queue order (so a scan can continue after it). */
  savedAt?: number;
}

/** The stand-in for an unreadable stored row. */
export function unreadableValue(id: unknown, owner?: string, savedAt?: number): UnreadableValue {
  return {
    [UNREADABLE]: true,
    id,
    ...(owner === undefined ? {} : { owner }),
    ...(savedAt === undefined ? {} : { savedAt }),
  };
}

/** Whether a value read from a store is the stand-in for an unreadable row. */
export function isUnreadable(value: unknown): value is UnreadableValue {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<string, unknown>)[UNREADABLE] === true
  );
}

/** The outcome of one settled request, kept for `watch`, `receipts()` and §8 lookups. */
export interface Receipt {
  requestId: string;
  owner: string;
  rowId: string;
  collection: string;
  kind: string;
  targetId: string;
  status: number;
  body: Json;
  /** The record's server id, when the response named one. */
  serverId?: string;
  revision?: number;
  settledAt: number;
}

/**
 * One summary per overwrite (SPEC §10, §20 G5): written with the conflict successor, before it
 * is sent, and completed by its success ACK. No bodies.
 */
export interface ConflictLedgerEntry {
  successorId: string;
  originalId: string;
  owner: string;
  collection: string;
  targetId: string;
  overwrittenRevision: number | null;
  /** The revision the resend produced; null until its ACK, or when the receipt named none. */
  finalRevision: number | null;
  lineageLength: number;
  copy: Json;
  recordedAt: number;
  /** When the ACK settled the resend; while `unsettled`, when the entry was written. */
  settledAt: number;
  /**
   * No answer read by this bundle has settled the resend yet: it is queued, on the wire, blocked
   * after it may have been applied, discarded after that, or sent and removed by a legacy tab
   * (§17), which writes no ledger. Its final revision is unknown, so it cannot be restored.
   */
  unsettled?: true;
  /** The successor's kind (`update`, `delete`, …); absent on entries written before §10.1. */
  kind?: string;
  /** What the resend overwrote, readable through the server (§10.1); null when not kept. */
  historyRef?: HistoryRef | null;
  /** Set by `restore`, in the transaction that enqueued the row writing that version back. */
  restoredBy?: { rowId: string; at: number };
  /**
   * Derived on read, never stored (§10.1, §15): when the server's copy of what was overwritten
   * is forgotten — the overwrite's time plus the retention its server published (7 days when
   * none was) — and whether that time has passed. Only for entries with a `historyRef`.
   */
  historyExpiresAt?: number;
  historyExpired?: boolean;
}

/**
 * A removed row id (coalesced, cancelled or discarded), so `enqueue` stays idempotent (§9); or,
 * as `kept`, the id of a row enqueued with `keepId`, written with the row and kept for good (§22).
 */
export interface Tombstone {
  id: string;
  owner: string;
  reason: 'coalesced' | 'cancelled' | 'discarded' | 'converted' | 'superseded' | 'kept';
  /** The row that absorbed this one, when it was coalesced. */
  into?: string;
  at: number;
}

/**
 * One record, one name (SPEC §6.1): `pendingId` (`pending:<C>`) and the server id C's success
 * named are one record. Written in the transaction that settles C, kept while a row names
 * either id and at least {@link NAME_RETENTION_MS}; never pruned with receipts.
 */
export interface RecordName {
  owner: string;
  collection: string;
  /** `pending:<C>`, C the create's row id. */
  pendingId: string;
  serverId: string;
  /** The revision C's success produced, when the response named one. */
  revision?: number;
  settledAt: number;
}

/** How long a {@link RecordName} is kept at least (SPEC §6.1): 30 days. */
export const NAME_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** One observed row: its raw stored value, or null when it was observed absent. */
export interface Expectation {
  id: RowKey;
  row: unknown;
}

/**
 * The key a row is stored under. Rows written by this library have string ids; a corrupt value
 * written by someone else may sit under any key IndexedDB accepts, and its quarantine has to name
 * that key to replace it (§2, G7).
 */
export type RowKey = string | number | Date | ArrayBuffer | ArrayBufferView | readonly RowKey[];

/** One compare-and-swap write over every store involved (SPEC §3). */
export interface ReplacePlan {
  owner: string;
  expected: Expectation[];
  /**
   * Receipts and tombstones that must not exist, checked in the same transaction: an enqueue
   * with an id the app supplied is stale if that id was settled or removed meanwhile (§9).
   */
  absent?: { receipts?: string[]; tombstones?: string[] };
  /**
   * Records whose rows (of `owner`, by `by_owner_target`, under both its names, §6.1) must be
   * exactly `ids`, checked in the same transaction: an ACK planned without reading its record is stale once a successor or an
   * intent row of that record exists (§5, §6, §8); an enqueue is stale once another edit of its
   * record committed after it read the record (§6). `ids` are keys as stored: a corrupt value's
   * may not be a string.
   */
  records?: Array<{ collection: string; targetId: string; ids: RowKey[] }>;
  put?: unknown[];
  /**
   * Ids of `put` rows that take a fresh `seq` (SPEC §6.1), in this order: the store assigns each
   * the next value of the owner's counter, read and raised inside this same transaction, so a
   * smaller `seq` was committed earlier. A stale plan assigns nothing and raises nothing; a put
   * row not named here is stored with the `seq` it carries (or none).
   */
  seq?: string[];
  delete?: RowKey[];
  receipts?: Receipt[];
  ledger?: ConflictLedgerEntry[];
  /**
   * Ledger entries to remove, by successor id: the resend of each left the outbox, or carried
   * its evidence on to another row, known never to have been applied (§10).
   */
  ledgerDelete?: string[];
  tombstones?: Tombstone[];
  /** Record names to write (§6.1): the success ACK of a create writes its server id's. */
  names?: RecordName[];
  /** `strict` for writes that create or replace user intent; default for claims and ACKs. */
  durability?: 'strict' | 'default';
  /** Why, for the change notice (`enqueue`, `claim`, `settle`, …). */
  reason: string;
}

/** Whether a `replace` committed, or wrote nothing because an observation no longer held. */
export type ReplaceResult = 'committed' | 'stale';

/** The notice published once per committed `replace` (BroadcastChannel `sw-outbox:<db>`). */
export interface ChangeNotice {
  ids: string[];
  /** The plan's reason, or `held` when the commit left a row held for credentials (§23). */
  reason: string;
  owner: string;
}

/** A position in the `[owner, savedAt]` index, to continue a scan after the last row seen. */
export interface RowCursor {
  savedAt: number;
  id: string;
}

/** One record of an owner, by collection and either of its names (§6.1). */
export interface RecordRef {
  collection: string;
  targetId: string;
}

/**
 * A record to look at before a row of it leaves (§6.1): `except` is that row, which the look
 * need not read — a record holding only it costs its keys, not its value.
 */
export interface RecordLook extends RecordRef {
  except?: string;
}

/** The storage port (SPEC §3): raw reads, one compare-and-swap write, receipts, ledger, meta and change notices. */
export interface OutboxStore {
  /**
   * The raw stored value of a row, or undefined. Reads by id take the reader's `owner`: a value
   * of another owner then reads as absent, so a holder never sees another owner's rows (G6).
   */
  get(id: string, owner?: string): Promise<unknown>;
  /** The raw stored values of several rows (undefined where absent), read in one transaction. */
  getMany(ids: readonly string[], owner?: string): Promise<unknown[]>;
  /** Raw rows of one owner in `[savedAt, id]` order, after `after`, at most `limit`. */
  scan(owner: string, opts: { after?: RowCursor; limit: number }): Promise<unknown[]>;
  /**
   * Raw rows of one record (`by_owner_target`), under both its names (§6.1): the rows of
   * `pending:<C>` and of the server id its {@link RecordName} names.
   */
  byTarget(owner: string, collection: string, targetId: string): Promise<unknown[]>;
  /**
   * The rows of several records, each as {@link byTarget} reads it, in one call: the last look a
   * batch takes at its records before it leaves (§6.1). A record's `except` row may be left out;
   * when it is the only row of its record, nothing of the record is returned.
   */
  byTargets(owner: string, records: readonly RecordLook[]): Promise<unknown[][]>;
  /**
   * Raw rows of one owner that may hold other rows wherever the queue puts them (§6.1): those on
   * the wire (`state: "sending"`, whose value may have gone bad) and those that follow another
   * row (`successorOf`: successors and intents, an orphan among them), read by index in one
   * transaction, so a pass knows what holds before any row of it goes without reading the whole
   * queue (§7, §19). A row may come twice; a value the store cannot read is left out (it is on
   * nobody's wire: the scan quarantines it).
   */
  holdingRows(owner: string): Promise<unknown[]>;
  /** Compare-and-swap in one transaction (SPEC §3). Throws only for storage faults. */
  replace(plan: ReplacePlan): Promise<ReplaceResult>;
  /**
   * Several independent plans of one owner in ONE transaction (batched claims and ACKs, SPEC §4):
   * each plan is compared on its own, in order, and applied only if its observation still
   * holds; a stale plan is skipped, the rest commit. One change notice covers them all.
   */
  replaceEach(plans: ReplacePlan[]): Promise<ReplaceResult[]>;
  /** A receipt by request id; with `owner`, another owner's reads as absent (G6). */
  getReceipt(requestId: string, owner?: string): Promise<Receipt | undefined>;
  /** Newest first. */
  listReceipts(owner: string, limit: number): Promise<Receipt[]>;
  /** Newest first. */
  listConflicts(owner: string, limit: number): Promise<ConflictLedgerEntry[]>;
  /** A tombstone by id; with `owner`, another owner's reads as absent (G6). */
  getTombstone(id: string, owner?: string): Promise<Tombstone | undefined>;
  /** The server id `pending:<C>` names for `owner`, if C settled (§6.1). */
  getName(owner: string, pendingId: string): Promise<RecordName | undefined>;
  /**
   * Drops receipts beyond `maxCount` per owner or older than `olderThan`; ledger beyond
   * `maxLedger`; with `namesOlderThan`, the record names settled before it that no row names.
   */
  prune(
    owner: string,
    limits: { maxReceipts: number; olderThan: number; maxLedger: number; namesOlderThan?: number },
  ): Promise<void>;
  getMeta(key: string): Promise<Json | undefined>;
  setMeta(key: string, value: Json | undefined): Promise<void>;
  /**
   * Read-modify-write of one meta value in ONE transaction, so contexts updating it at the same
   * time never lose each other's change. `update` is synchronous and may run more than once;
   * returning `undefined` deletes the value. Resolves with the value written.
   */
  updateMeta(
    key: string,
    update: (current: Json | undefined) => Json | undefined,
  ): Promise<Json | undefined>;
  /** Subscribes to change notices from every connection (this one included). */
  onChange(listener: (notice: ChangeNotice) => void): () => void;
  close(): void;
}
