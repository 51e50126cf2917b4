import type { CollectionHandler, IntentInfo } from '../model/handler.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import type { Expectation, Receipt, Tombstone } from '../model/store.ts';
import { buildRowRequest } from './identity.ts';
import { inMadeOrder } from './made-order.ts';

/** What converting intents needs besides the rows: the time, the owner and new request ids. */
export interface ConversionContext {
  now: number;
  owner: string;
  /** Makes a new request id for a prefix (the id port, wrapped). */
  newId(prefix: string): string;
}

/** The writes that turn intent rows into real requests, to commit in one `replace` (§8). */
export interface ConversionPlan {
  expected: Expectation[];
  put: OutboxRow[];
  delete: string[];
  tombstones: Tombstone[];
  converted: { intentId: string; into: string }[];
  blocked: { intentId: string; detail: string }[];
}

/** The default successor: the same intent aimed at the receipt's server id and revision. */
function defaultPrepare(intent: OutboxRow, receipt: Receipt): IntentInfo {
  if (receipt.serverId === undefined) throw new Error('the receipt names no server id');
  return {
    collection: intent.collection,
    kind: intent.kind,
    targetId: receipt.serverId,
    payload: intent.payload,
    baseRevision: receipt.revision ?? intent.baseRevision ?? null,
  };
}

/**
 * Plans converting the intent rows of a create once its receipt is known (SPEC §8), in
 * `savedAt` order. Each gets a new request id and fingerprint; links between intents are
 * carried over to the new ids so their order is kept (G4). A handler that cannot prepare one
 * blocks it with `successor_unprepared`, its original kept.
 */
export function planIntentConversion(
  intents: Observed[],
  predecessor: OutboxRow | undefined,
  receipt: Receipt,
  handler: CollectionHandler | undefined,
  ctx: ConversionContext,
): ConversionPlan {
  const plan: ConversionPlan = {
    expected: [],
    put: [],
    delete: [],
    tombstones: [],
    converted: [],
    blocked: [],
  };
  const renamed = new Map<string, string>();
  // In the order the edits were made (§6.1, §8).
  const ordered = inMadeOrder(intents);
  for (const { row: intent, raw } of ordered) {
    plan.expected.push({ id: intent.id, row: raw });
    let info: IntentInfo;
    try {
      if (handler === undefined)
        throw new Error(`no handler for collection "${intent.collection}"`);
      info =
        handler.prepareSuccessor?.({ intent, predecessor, receipt }) ??
        defaultPrepare(intent, receipt);
      const requestId = ctx.newId(intent.collection);
      const prepared = handler.toRequest(info);
      const successorOf =
        intent.successorOf === undefined
          ? undefined
          : (renamed.get(intent.successorOf) ?? intent.successorOf);
      const { successorOf: _old, ...rest } = intent;
      const row: OutboxRow = {
        ...rest,
        v: 1,
        id: requestId,
        kind: info.kind,
        targetId: info.targetId,
        payload: info.payload,
        baseRevision: info.baseRevision ?? null,
        state: 'queued',
        request: buildRowRequest(prepared, requestId, info.baseRevision),
        ...(successorOf === undefined ? {} : { successorOf }),
      };
      renamed.set(intent.id, requestId);
      plan.put.push(row);
      plan.delete.push(intent.id);
      plan.tombstones.push({
        id: intent.id,
        owner: ctx.owner,
        reason: 'converted',
        into: requestId,
        at: ctx.now,
      });
      plan.converted.push({ intentId: intent.id, into: requestId });
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      plan.put.push({
        ...intent,
        state: 'blocked',
        blockedAt: ctx.now,
        blockedCode: 'successor_unprepared',
        blockedDetail: detail,
      });
      plan.blocked.push({ intentId: intent.id, detail });
    }
  }
  return plan;
}
