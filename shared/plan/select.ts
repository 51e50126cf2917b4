import { isIntentRow, type OutboxRow } from '../model/row.ts';
import { isRowInFlight } from './in-flight.ts';
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

/**
 * The sendable rows among `rows` (already in `[savedAt, id]` order), at most one per record so
 * that a record's rows never travel together (G4).
 */
export function selectSendableRows(
  rows: OutboxRow[],
  ctx: SelectContext,
  predecessor: PredecessorLookup,
  busyTargets: ReadonlySet<string> = new Set(),
): OutboxRow[] {
  return selectBatch(rows, ctx, predecessor, busyTargets).sendable;
}

/**
 * One selection batch of a pass over the queue (SPEC §7): the sendable rows, and the records
 * closed for the rest of the pass — those `closed` already, those whose row was chosen, and those
 * whose earlier row holds its later ones. A later batch given them never sends a row of such a
 * record, so rows of one record go in queue order and one at a time even when they fall in
 * different batches and no `successorOf` link ties them (G4).
 */
export function selectBatch(
  rows: OutboxRow[],
  ctx: SelectContext,
  predecessor: PredecessorLookup,
  closed: ReadonlySet<string>,
): { sendable: OutboxRow[]; closed: Set<string> } {
  const chosen: OutboxRow[] = [];
  const targets = new Set(closed);
  for (const row of rows) {
    const key = targetKey(row);
    if (targets.has(key)) continue;
    const verdict = sendability(row, ctx, predecessor);
    if (verdict !== 'sendable') {
      // A record whose earlier row waits keeps its later rows waiting too. Not a row waiting on
      // its predecessor: that predecessor may sort after it (saved in the same millisecond, or
      // under a clock that stepped back) and must still go; later rows of the chain wait on
      // their own `successorOf` link.
      if (verdict !== 'blocked' && verdict !== 'waiting') targets.add(key);
      continue;
    }
    targets.add(key);
    chosen.push(row);
  }
  return { sendable: chosen, closed: targets };
}

/** The record a row is about: `collection` + `targetId`. */
export function targetKey(row: Pick<OutboxRow, 'collection' | 'targetId'>): string {
  return `${row.collection}\u0000${row.targetId}`;
}
