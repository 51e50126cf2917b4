import type { CollectionHandler } from '../model/handler.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import type { Expectation, Receipt } from '../model/store.ts';
import { buildRowRequest } from './identity.ts';
import { wasAttempted } from './in-flight.ts';

/**
 * Rebases the waiting successors of a row that just succeeded (SPEC §6, G4). An edit made while
 * its predecessor was in flight was made from the same revision as that predecessor: the user
 * edited on top of their own pending edit. Once the predecessor's receipt names the revision it
 * produced, the successor's request is rebuilt on that revision — otherwise it would meet the
 * user's own edit as a conflict. Committed with the predecessor's ACK, in one transaction.
 *
 * The row keeps its id and request id: a successor is never sent while its predecessor exists,
 * and this rewrite deletes that predecessor in the same transaction, so no server has seen the
 * id with the old bytes (the rule of §9 that a new request gets a new id protects exactly that).
 * Only rows never attempted, made from the predecessor's base revision, are touched.
 */
export function planSuccessorRebase(
  successors: Observed[],
  predecessor: OutboxRow,
  receipt: Receipt,
  handler: CollectionHandler | undefined,
): { expected: Expectation[]; put: OutboxRow[] } {
  const plan = { expected: [] as Expectation[], put: [] as OutboxRow[] };
  const base = predecessor.baseRevision;
  if (
    handler === undefined ||
    receipt.revision === undefined ||
    base === null ||
    base === undefined
  ) {
    return plan;
  }
  for (const { row, raw } of successors) {
    if (row.successorOf !== predecessor.id || row.request === undefined || wasAttempted(row))
      continue;
    if (row.baseRevision !== base || row.state !== 'queued') continue;
    let request: OutboxRow['request'];
    try {
      const prepared = handler.toRequest({
        collection: row.collection,
        kind: row.kind,
        targetId: row.targetId,
        payload: row.payload,
        baseRevision: receipt.revision,
      });
      request = buildRowRequest(prepared, row.request.requestId, receipt.revision);
    } catch {
      continue;
    }
    plan.expected.push({ id: row.id, row: raw });
    plan.put.push({ ...row, baseRevision: receipt.revision, request });
  }
  return plan;
}
