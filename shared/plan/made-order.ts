import type { OutboxRow } from '../model/row.ts';

/**
 * Rows in the order their edits were made (SPEC §6.1): by `seq`, the order in which the store
 * committed them, never by a clock reading. A row without `seq` (a legacy v0 tab's, an older
 * bundle's) has no known place among rows that have one: a set that holds one is ordered by its
 * writers' `savedAt`, then id — the legacy order, which is all such rows have among themselves.
 */
export function inMadeOrder<T extends { row: Pick<OutboxRow, 'seq' | 'savedAt' | 'id'> }>(
  rows: readonly T[],
): T[] {
  const bySeq = rows.every(({ row }) => row.seq !== undefined);
  return [...rows].sort(({ row: a }, { row: b }) =>
    bySeq ? a.seq! - b.seq! : a.savedAt - b.savedAt || (a.id < b.id ? -1 : 1),
  );
}
