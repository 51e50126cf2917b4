import { isIntentRow, type OutboxRow, type RowStatus } from '../model/row.ts';
import { isRowInFlight } from './in-flight.ts';
import type { PredecessorLookup, SelectContext } from './select.ts';
import { isUnknownVersion } from './unknown-version.ts';

/** The display status of a row (SPEC §2), derived, never stored. */
export function rowStatus(
  row: OutboxRow,
  ctx: Omit<SelectContext, 'force'>,
  predecessor: PredecessorLookup,
): RowStatus {
  if (isUnknownVersion(row)) return 'unknown';
  if (row.state === 'blocked') return 'blocked';
  if (row.state === 'held') return 'held';
  if (isRowInFlight(row, ctx.now, ctx.leaseMs)) return 'sending';
  if (isIntentRow(row)) return 'intent';
  if (row.successorOf !== undefined && predecessor(row.successorOf, row.id) === 'present')
    return 'waiting';
  if (row.state !== 'queued' && row.state !== 'sending') return 'unknown';
  return row.deferredAt !== undefined ? 'deferred' : 'queued';
}
