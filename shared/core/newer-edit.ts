import type { OutboxRow } from '../model/row.ts';
import { newRequestId } from '../plan/identity.ts';
import type { NewerEdit } from '../plan/manual-actions.ts';
import type { CoreDeps } from './types.ts';

/**
 * The newest edit of a blocked row's record applied after the row was blocked, read from the
 * owner's receipts, for `retry` (§13, G4). Receipts are bounded and pruned: an edit older than
 * they reach is not found, and the row is retried as it is.
 */
export async function newerEditOf(
  deps: CoreDeps,
  owner: string,
  row: OutboxRow,
): Promise<NewerEdit | undefined> {
  const handler = deps.handlers[row.collection];
  if (row.state !== 'blocked' || handler === undefined) return undefined;
  const since = row.blockedAt ?? row.savedAt;
  const receipts = await deps.store.listReceipts(owner, deps.receipts.maxCount);
  const receipt = receipts.find(
    (r) =>
      r.collection === row.collection &&
      r.targetId === row.targetId &&
      r.rowId !== row.id &&
      r.settledAt >= since,
  );
  if (receipt === undefined) return undefined;
  return {
    receipt,
    handler,
    successorId: newRequestId(deps.ids, row.collection),
    now: deps.clock.now(),
  };
}
