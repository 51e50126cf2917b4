import type { Observed, OutboxRow } from '../model/row.ts';
import { isQuarantined } from './quarantine.ts';
import { isUnknownVersion } from './unknown-version.ts';

/**
 * The blocked rows of a record that an edit of it goes past (SPEC §6, §7, G4): a blocked row does
 * not hold its record, so the edit sent now is newer than what the row carries, and once it may
 * have been applied the row must never be merged into a later edit (its older fields would land
 * over it) nor resent unchecked. What decides is the order the edits were made (`seq`, §6.1),
 * never two clock readings. A quarantined value is never rewritten (G7), nor a row of a format
 * this bundle does not know (§17: its own bundle sends it, and a rewrite would drop what this one
 * cannot read).
 */
export function overtaken(sent: OutboxRow, record: readonly Observed[]): Observed[] {
  return record.filter(
    ({ row }) =>
      row.state === 'blocked' &&
      row.id !== sent.id &&
      !isQuarantined(row) &&
      !isUnknownVersion(row) &&
      !madeAfter(row, sent),
  );
}

/**
 * Whether `row` is known to carry an edit made after `sent` (§6.1): then `sent` landing does not
 * go past it. Without `seq` on both, its place is unknown and it counts as overtaken — the mark
 * only ever keeps a row from being merged or resent unchecked.
 */
function madeAfter(row: OutboxRow, sent: OutboxRow): boolean {
  return row.seq !== undefined && sent.seq !== undefined && row.seq > sent.seq;
}
