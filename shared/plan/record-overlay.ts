import type { CollectionHandler, IntentInfo } from '../model/handler.ts';
import { deepEqual, isJsonObject, type Json } from '../model/json.ts';
import type { RowView } from '../model/page-api.ts';
import { PENDING_PREFIX, pendingCreateId } from '../model/pending.ts';
import type { OutboxRow, RowStatus } from '../model/row.ts';
import type { Receipt } from '../model/store.ts';
import { mergeIntents } from './merge.ts';

/**
 * Records, not rows: the app's server records of one collection with the outbox's pending edits
 * laid over them (SPEC §2 display statuses, §6 merge rules, §8 pending creates). The overlay
 * folds a record's edits with the handler's own merge ({@link mergeIntents}: the rule that
 * coalesces rows in the outbox is the rule that shows them), so what a user sees is what the
 * outbox will send. Pure: the caller keeps the rows, the receipts and the app's records.
 */

/** One record as the app has it from its server: its id, its value and, when known, its revision. */
export interface ServerRecord<T = Json> {
  id: string;
  value: T;
  revision?: number | null;
}

/**
 * A row the server applied, kept so that its answer stands in for the record until the app's
 * own data catches up (nothing flickers back to the old value between the settle and the app's
 * refetch).
 */
export interface SettledEdit {
  /** The row as last seen before it settled. */
  row: OutboxRow;
  /** Its receipt: the server id, the revision and the body the server answered. */
  receipt: Pick<Receipt, 'body'> & Partial<Pick<Receipt, 'serverId' | 'revision'>>;
  /** The app's record of that id when the receipt was noted (absent: the app did not have it). */
  seen?: ServerRecord<unknown> | undefined;
}

/**
 * One status per record, from the rows that carry its edits (the "most urgent" row decides):
 * `blocked` (a row needs the user: retry or discard) over `held` (waits for credentials) over
 * `unknown` (a row this bundle cannot read) over `sending` over `retrying` (a row waits for its
 * next attempt after a failure, SPEC `deferred`) over `pending` (`queued`, `waiting`, `intent`);
 * `synced` when no row is left.
 */
export type RecordStatus =
  | 'synced'
  | 'pending'
  | 'retrying'
  | 'sending'
  | 'unknown'
  | 'held'
  | 'blocked';

/** The record-level status each row status counts as, most urgent last. */
export const RECORD_STATUS_OF: Readonly<Record<RowStatus, RecordStatus>> = {
  queued: 'pending',
  waiting: 'pending',
  intent: 'pending',
  deferred: 'retrying',
  sending: 'sending',
  unknown: 'unknown',
  held: 'held',
  blocked: 'blocked',
};

/** Record statuses from the least to the most urgent. */
export const RECORD_STATUSES: readonly RecordStatus[] = [
  'synced',
  'pending',
  'retrying',
  'sending',
  'unknown',
  'held',
  'blocked',
];

/** A record as the UI shows it. */
export interface RecordView<T = Json> {
  /** The record's name now: its server id once known, else `pending:<create id>` (§8). */
  id: string;
  /**
   * A name that stays the same when a pending create gets its server id (a list key): the
   * pending name while this overlay knows it, else `id`.
   */
  key: string;
  /** The pending name of a record created here, while the overlay knows it. */
  pendingId?: string;
  /** The value with every pending edit laid over it; undefined once it is deleted. */
  value: T | undefined;
  /** A delete of it is pending (or settled and the app's data has not caught up yet). */
  deleted: boolean;
  status: RecordStatus;
  /** The row whose status decides `status` (the first of the most urgent); absent when synced. */
  decidedBy?: RowView;
  /** The record's rows, in the order they were made. */
  rows: RowView[];
  /**
   * The newest revision the server is known to hold: a settled edit's while it stands in, else
   * the app's. The `baseRevision` of an edit of a synced record.
   */
  revision?: number | null;
}

/** What {@link overlayRecords} takes. */
export interface RecordOverlayInput<T = Json> {
  /** The app's records of the collection, in the order it lists them. */
  records: readonly ServerRecord<T>[];
  /** The outbox's rows of the collection (`subscribe(…, { collection })`). */
  rows: readonly RowView[];
  /** Rows the server applied, in the order they settled (see {@link SettledEdit}). */
  settled?: readonly SettledEdit[];
  /** The collection's merge rules (`coalesce`), when the app overrides the defaults (§6). */
  handler?: Pick<CollectionHandler, 'coalesce'>;
}

/**
 * Whether a settled edit still stands in for its record: until the app's record has the
 * receipt's revision (or a newer one), or — with no revisions to compare — until the app's record
 * differs from the one it had when the receipt was noted. A settled delete stops once the app no
 * longer lists the record.
 */
export function standsIn(edit: SettledEdit, record: ServerRecord<unknown> | undefined): boolean {
  const revision = edit.receipt.revision;
  if (record === undefined && edit.row.kind === 'delete') return false;
  if (revision !== undefined && typeof record?.revision === 'number')
    return record.revision < revision;
  if (record === undefined || edit.seen === undefined) return record === edit.seen;
  return record.revision === edit.seen.revision && deepEqual(record.value, edit.seen.value);
}

/** The records to list: the app's, with edits over them and deleted ones left out, then creates. */
export function overlayRecords<T = Json>(input: RecordOverlayInput<T>): RecordView<T>[] {
  return overlayAll(input).filter((view) => !view.deleted);
}

/**
 * One record by either of its names (server id or `pending:<id>`), deleted ones included; a
 * record neither the app nor the outbox has is undefined.
 */
export function overlayRecord<T = Json>(
  input: RecordOverlayInput<T>,
  id: string,
): RecordView<T> | undefined {
  const views = overlayAll(input, true);
  return views.find((view) => view.id === id || view.pendingId === id);
}

type Folded = { kind: string; payload: Json | undefined } | 'gone' | undefined;

/** A record's made order: the store's `seq` where both rows have one (§6.1), else queue order. */
function madeOrder(a: OutboxRow, b: OutboxRow): number {
  const sa = (a as { seq?: unknown }).seq;
  const sb = (b as { seq?: unknown }).seq;
  if (typeof sa === 'number' && typeof sb === 'number' && sa !== sb) return sa - sb;
  return a.savedAt - b.savedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** A record under construction: what is known of it, by its current name. */
interface Entry {
  name: string;
  pendingId?: string;
  record?: ServerRecord<unknown>;
  settled: SettledEdit[];
  rows: RowView[];
  /** Whether the outbox made it (a pending or settled create): listed without the app's record. */
  created: boolean;
  order: OutboxRow | undefined;
}

function overlayAll<T>(input: RecordOverlayInput<T>, everyName = false): RecordView<T>[] {
  const { records, rows, settled = [], handler } = input;
  const merge = (earlier: IntentInfo, later: IntentInfo) => mergeIntents(earlier, later, handler);

  // One record, one name (§6.1): `pending:<C>` and the server id C's receipt named, learned from
  // the settled create or from a converted intent, which keeps `successorOf: C` (§8).
  const serverIdOf = new Map<string, string>();
  for (const edit of settled)
    if (edit.row.kind === 'create' && edit.receipt.serverId !== undefined)
      serverIdOf.set(edit.row.targetId, edit.receipt.serverId);
  const creates = new Set(
    [...rows.map((view) => view.row), ...settled.map((edit) => edit.row)].flatMap((row) =>
      row.kind === 'create' && pendingCreateId(row.targetId) !== undefined ? [row.targetId] : [],
    ),
  );
  for (const { row } of rows) {
    const pending =
      row.successorOf === undefined ? undefined : `${PENDING_PREFIX}${row.successorOf}`;
    if (
      pending !== undefined &&
      creates.has(pending) &&
      pendingCreateId(row.targetId) === undefined
    )
      serverIdOf.set(pending, row.targetId);
  }
  const pendingOf = new Map([...serverIdOf].map(([pending, id]) => [id, pending]));
  const nameOf = (targetId: string) => serverIdOf.get(targetId) ?? targetId;

  const entries = new Map<string, Entry>();
  const entryOf = (name: string): Entry => {
    let entry = entries.get(name);
    if (entry === undefined) {
      const pendingId = pendingCreateId(name) !== undefined ? name : pendingOf.get(name);
      entry = { name, settled: [], rows: [], created: false, order: undefined };
      if (pendingId !== undefined) entry.pendingId = pendingId;
      entries.set(name, entry);
    }
    return entry;
  };
  for (const record of records) entryOf(record.id).record = record;
  for (const edit of settled) {
    const name = edit.receipt.serverId ?? nameOf(edit.row.targetId);
    const entry = entryOf(name);
    if (!standsIn(edit, entry.record)) continue;
    entry.settled.push(edit);
    if (edit.row.kind === 'create') entry.created = true;
    if (entry.order === undefined || madeOrder(edit.row, entry.order) < 0) entry.order = edit.row;
  }
  for (const view of [...rows].sort((a, b) => madeOrder(a.row, b.row))) {
    const entry = entryOf(nameOf(view.row.targetId));
    entry.rows.push(view);
    if (view.row.kind === 'create') entry.created = true;
    if (entry.order === undefined) entry.order = view.row;
  }

  const listed = [...entries.values()].filter(
    (entry) => entry.record !== undefined || entry.created || (everyName && entry.rows.length > 0),
  );
  const fromApp = listed.filter((entry) => entry.record !== undefined);
  const fromOutbox = listed
    .filter((entry) => entry.record === undefined)
    .sort((a, b) => (a.order && b.order ? madeOrder(a.order, b.order) : 0));
  return [...fromApp, ...fromOutbox].map((entry) => viewOf<T>(entry, merge));
}

function viewOf<T>(
  entry: Entry,
  merge: (earlier: IntentInfo, later: IntentInfo) => ReturnType<typeof mergeIntents>,
): RecordView<T> {
  const intentOf = (kind: string, payload: Json | undefined): IntentInfo => ({
    collection: '',
    kind,
    targetId: entry.name,
    payload,
    baseRevision: undefined,
  });
  // The app's record is the base: an edit over it folds as an edit over a create of its value,
  // so update merges into it, delete cancels it, exactly as §6 folds rows.
  let folded: Folded =
    entry.record === undefined
      ? undefined
      : { kind: 'create', payload: entry.record.value as Json | undefined };
  const fold = (kind: string, payload: Json | undefined) => {
    const later = intentOf(kind, payload);
    if (folded === 'gone') return;
    if (folded === undefined || kind === 'create') {
      folded = kind === 'delete' ? 'gone' : { kind, payload };
      return;
    }
    const merged = merge(intentOf(folded.kind, folded.payload), later);
    if (merged.kind === 'merged') folded = merged.intent;
    else if (merged.kind !== 'keep_both') folded = 'gone';
  };
  let revision = entry.record?.revision;
  for (const edit of entry.settled) {
    fold(edit.row.kind, edit.row.payload);
    // The server's answer wins for what it names (a full record, or only `{ id, revision }`).
    if (edit.row.kind !== 'delete' && isJsonObject(edit.receipt.body))
      fold('update', edit.receipt.body);
    if (edit.receipt.revision !== undefined) revision = edit.receipt.revision;
  }
  let decidedBy: RowView | undefined;
  for (const view of entry.rows) {
    const status = RECORD_STATUS_OF[view.status];
    const decided = decidedBy === undefined ? 'synced' : RECORD_STATUS_OF[decidedBy.status];
    if (RECORD_STATUSES.indexOf(status) > RECORD_STATUSES.indexOf(decided)) decidedBy = view;
    // What a row of an unknown format or a quarantined value holds is not an intent to show.
    if (view.status !== 'unknown' && view.row.blockedCode !== 'row_corrupt')
      fold(view.row.kind, view.row.payload);
  }
  const result = folded as Folded;
  const deleted = result === 'gone' || result?.kind === 'delete';
  const view: RecordView<T> = {
    id: entry.name,
    key: entry.pendingId ?? entry.name,
    value: deleted ? undefined : (result?.payload as T | undefined),
    deleted,
    status: decidedBy === undefined ? 'synced' : RECORD_STATUS_OF[decidedBy.status],
    rows: entry.rows,
  };
  if (entry.pendingId !== undefined) view.pendingId = entry.pendingId;
  if (decidedBy !== undefined) view.decidedBy = decidedBy;
  if (revision !== undefined) view.revision = revision;
  return view;
}
