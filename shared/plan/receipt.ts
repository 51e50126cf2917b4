import type { CollectionHandler } from '../model/handler.ts';
import type { Json } from '../model/json.ts';
import { type OutboxRow, pendingCreateId } from '../model/row.ts';
import type { Receipt } from '../model/store.ts';
import { checkReceiptFacts } from './hook-values.ts';

/** The receipt of a settled request: what the server answered and the ids it named. */
export function receiptFor(
  handler: CollectionHandler | undefined,
  row: OutboxRow,
  status: number,
  body: Json,
  now: number,
): Receipt {
  const facts = checkReceiptFacts(handler?.readReceipt?.(body, status) ?? {});
  const serverId =
    facts.serverId ?? (pendingCreateId(row.targetId) === undefined ? row.targetId : undefined);
  return {
    requestId: row.request?.requestId ?? row.id,
    owner: row.owner,
    rowId: row.id,
    collection: row.collection,
    kind: row.kind,
    targetId: row.targetId,
    status,
    body,
    ...(serverId === undefined ? {} : { serverId }),
    ...(facts.revision == null ? {} : { revision: facts.revision }),
    settledAt: now,
  };
}
