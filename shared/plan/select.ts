import { isIntentRow, type OutboxRow } from '../model/row.ts';
import { isRowInFlight } from './in-flight.ts';
import { supersedes } from './made-order.ts';
import { isPulledForward } from './origin-recovery.ts';
import { isUnknownVersion } from './unknown-version.ts';

/** When and how a selection runs (SPEC §7). */
export interface SelectContext {
  now: number;
  leaseMs: number;
  /** Ignore `nextAttemptAt` (a forced flush, SPEC §11). */
  force: boolean;
  /** Origins a request succeeded to in this flush: their network-deferred rows are due (§12). */
  recovered?: ReadonlySet<string>;
}

/** What the selection knows about a `successorOf` row: gone, blocked, or still waiting. */
export type PredecessorState = 'absent' | 'blocked' | 'present';

/** Looks up the state of `id` as the predecessor of the row `askerId`. */
export type PredecessorLookup = (id: string, askerId?: string) => PredecessorState;

/** Why a row is not sendable now, or `sendable` (SPEC §7, in the order the rules apply). */
export type Sendability =
  | 'sendable'
  | 'blocked'
  | 'held'
  | 'in_flight'
  | 'waiting'
  | 'intent'
  | 'backoff'
  | 'unknown_state';

/** Applies the sendable rules of SPEC §7 to one row. */
export function sendability(
  row: OutboxRow,
  ctx: SelectContext,
  predecessor: PredecessorLookup,
): Sendability {
  // Not this bundle's to send, and its record waits on it (§17).
  if (isUnknownVersion(row)) return 'unknown_state';
  if (row.state === 'blocked') return 'blocked';
  if (row.state === 'held') return 'held';
  if (isRowInFlight(row, ctx.now, ctx.leaseMs)) return 'in_flight';
  if (row.successorOf !== undefined && predecessor(row.successorOf, row.id) === 'present')
    return 'waiting';
  if (isIntentRow(row) || row.request === undefined) return 'intent';
  if (
    !ctx.force &&
    row.nextAttemptAt !== undefined &&
    row.nextAttemptAt > ctx.now &&
    !(ctx.recovered !== undefined && isPulledForward(row, ctx.recovered))
  )
    return 'backoff';
  if (row.state !== 'queued' && row.state !== 'sending') return 'unknown_state';
  return 'sendable';
}

/** Which row of one record goes next, or why none of them does (SPEC §6.1, §7). */
export type RecordTurn = { kind: 'go'; row: OutboxRow } | { kind: 'wait'; why: Sendability };

/**
 * The row of one record whose turn it is (SPEC §6.1): the earliest made of its unsettled rows,
 * and only while no row of the record is in flight by any holder, the legacy fallback included.
 * `rows` are all the record's rows known (under both its names); settled rows — blocked, or of a
 * newer format and not in flight — hold nothing (§6, §7).
 *
 * Order is `seq`, the store's commit order; rows without one (a legacy v0 tab's, an older
 * bundle's) come after the rows that have one unless a `successorOf` link says otherwise, and
 * among themselves by their writer's `savedAt`. A link always wins: a row waits on the row it
 * names. Nothing is read from a clock to order rows of the two kinds.
 */
export function recordTurn(
  rows: readonly OutboxRow[],
  ctx: SelectContext,
  predecessor: PredecessorLookup,
): RecordTurn {
  if (rows.some((row) => isRowInFlight(row, ctx.now, ctx.leaseMs)))
    return { kind: 'wait', why: 'in_flight' };
  const open = rows.filter((row) => !holdsNothing(row));
  // A row without `seq` that no row with one links to was committed after them all: an edit's
  // transaction that saw it would have linked to it or merged it (§6), and one that did not see
  // it committed first. So the rows with `seq` go first, and a link is the only way across.
  const head =
    firstOf(open.filter((row) => row.seq !== undefined)) ??
    firstOf(open.filter((row) => row.seq === undefined));
  if (head === undefined) return { kind: 'wait', why: 'blocked' };
  const byId = new Map(open.map((row) => [row.id, row]));
  // A conflict successor stands for the rows it replaced: a link to one of them is a link to it.
  for (const row of open) for (const id of supersedes(row)) if (!byId.has(id)) byId.set(id, row);
  let first = linkedFirst(head, byId);
  // A link from a row with `seq` into the rows without reaches their first: they go in their
  // writers' order.
  if (head.seq !== undefined && first.seq === undefined)
    first = linkedFirst(firstOf(open.filter((row) => row.seq === undefined))!, byId);
  const verdict = sendability(first, ctx, predecessor);
  return verdict === 'sendable' ? { kind: 'go', row: first } : { kind: 'wait', why: verdict };
}

/**
 * The row `row` waits on, through its `successorOf` links among the record's open rows: a
 * predecessor goes first whatever the order says (a legacy row saved in the same millisecond as
 * its successor, or under a clock that stepped back, may sort after it).
 */
function linkedFirst(row: OutboxRow, open: ReadonlyMap<string, OutboxRow>): OutboxRow {
  const seen = new Set<string>();
  let first = row;
  for (;;) {
    seen.add(first.id);
    const before = first.successorOf === undefined ? undefined : open.get(first.successorOf);
    if (before === undefined || seen.has(before.id)) return first;
    first = before;
  }
}

/**
 * A row that holds no later row of its record (§6, §7): blocked for the app, or of a newer format
 * (its bundle sends it). A row held for credentials still holds them: every later row of its
 * record needs the same credentials, and one let past would be overwritten by it once they come.
 */
export function holdsNothing(row: OutboxRow): boolean {
  return row.state === 'blocked' || isUnknownVersion(row);
}

/** The first made of `rows`: by `seq` when they have one, else by `savedAt`, then id. */
function firstOf(rows: readonly OutboxRow[]): OutboxRow | undefined {
  return rows.reduce<OutboxRow | undefined>(
    (first, row) => (first === undefined || madeBefore(row, first) ? row : first),
    undefined,
  );
}

function madeBefore(a: OutboxRow, b: OutboxRow): boolean {
  if (a.seq !== undefined && b.seq !== undefined) return a.seq < b.seq;
  return a.savedAt < b.savedAt || (a.savedAt === b.savedAt && a.id < b.id);
}

/**
 * The rows whose turn it is (SPEC §7), one per record of `records` — each record's rows as known
 * — leaving out records in `busy`. In the order the store committed them: rows without `seq`
 * (written before any row that has one) first, then by `seq`; the clock orders nothing here.
 */
export function selectTurns(
  records: Iterable<readonly OutboxRow[]>,
  ctx: SelectContext,
  predecessor: PredecessorLookup,
  busy: ReadonlySet<string> = new Set(),
): OutboxRow[] {
  const chosen: OutboxRow[] = [];
  for (const rows of records) {
    const first = rows[0];
    if (first === undefined || busy.has(targetKey(first))) continue;
    const turn = recordTurn(rows, ctx, predecessor);
    if (turn.kind === 'go') chosen.push(turn.row);
  }
  return chosen.sort((a, b) => (a.seq ?? -1) - (b.seq ?? -1));
}

/**
 * The sendable rows among `rows` (SPEC §7): each record's turn, a record being the rows of one
 * `collection` and `targetId`.
 */
export function selectSendableRows(
  rows: OutboxRow[],
  ctx: SelectContext,
  predecessor: PredecessorLookup,
  busyTargets: ReadonlySet<string> = new Set(),
): OutboxRow[] {
  const records = new Map<string, OutboxRow[]>();
  for (const row of rows) {
    const key = targetKey(row);
    records.set(key, [...(records.get(key) ?? []), row]);
  }
  return selectTurns(records.values(), ctx, predecessor, busyTargets);
}

/** The record a row is about: `collection` + `targetId`. */
export function targetKey(row: Pick<OutboxRow, 'collection' | 'targetId'>): string {
  return `${row.collection}\u0000${row.targetId}`;
}
