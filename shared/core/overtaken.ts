import type { Observed } from '../model/row.ts';
import { isQuarantined } from '../plan/quarantine.ts';
import type { CoreDeps } from './types.ts';

/**
 * The blocked rows of a record that a newer edit of the record overtook (SPEC §6, §7, G4): a
 * blocked row does not hold its successors, so an edit made after it may have been applied while
 * it waited. Merging such a row into the next edit would write its older fields over that newer
 * edit, so it stays as it is. Read from the owner's receipts, as `retry` does; receipts are
 * bounded, so an overtaking edit older than they reach is not seen.
 */
export async function overtakenRows(
  deps: CoreDeps,
  owner: string,
  rows: readonly Observed[],
): Promise<Set<string>> {
  const blocked = rows.filter(({ row }) => row.state === 'blocked' && !isQuarantined(row));
  const overtaken = new Set<string>();
  if (blocked.length === 0) return overtaken;
  const receipts = await deps.store.listReceipts(owner, deps.receipts.maxCount);
  for (const { row } of blocked) {
    const since = row.blockedAt ?? row.savedAt;
    const newer = receipts.some(
      (r) =>
        r.collection === row.collection &&
        r.targetId === row.targetId &&
        r.rowId !== row.id &&
        r.settledAt >= since,
    );
    if (newer) overtaken.add(row.id);
  }
  return overtaken;
}
