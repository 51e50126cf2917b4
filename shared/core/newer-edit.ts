import type { OutboxRow } from '../model/row.ts';
import { newRequestId } from '../plan/identity.ts';
import type { NewerEdit } from '../plan/manual-actions.ts';
import type { CoreDeps } from './config.ts';

/**
 * The newest edit of a blocked row's record applied after the row was blocked, for `retry`
 * (§13, G4): the receipt its ACK named when it marked the row (`overtakenBy`). Receipts are
 * bounded and pruned: one no longer kept still tells that an edit went past the row, without
 * the revision it produced.
 */
export async function newerEditOf(
  deps: CoreDeps,
  owner: string,
  row: OutboxRow,
): Promise<NewerEdit | undefined> {
  const handler = deps.handlers[row.collection];
  if (row.state !== 'blocked' || handler === undefined || row.overtakenBy === undefined)
    return undefined;
  const receipt = await deps.store.getReceipt(row.overtakenBy, owner);
  return {
    ...(receipt === undefined ? {} : { receipt }),
    handler,
    successorId: newRequestId(deps.ids, row.collection),
    now: deps.clock.now(),
  };
}
