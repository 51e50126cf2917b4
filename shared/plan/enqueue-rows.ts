import type { IntentInfo } from '../model/handler.ts';
import type { Json } from '../model/json.ts';
import type { EnqueueResult } from '../model/page-api.ts';
import type { Observed } from '../model/row.ts';
import { isIntentRow, type OutboxRow, pendingCreateId } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { ledgerChanges } from './conflict-ledger.ts';
import type { EnqueueContext, EnqueuePlan, NewIntent } from './enqueue-types.ts';
import { checkMerged } from './hook-values.ts';
import { buildRowRequest } from './identity.ts';
import { mergeIntents } from './merge.ts';
import { isQuarantined } from './quarantine.ts';
import { isUnknownVersion } from './unknown-version.ts';

/**
 * The row writes an enqueue plans (SPEC §6, §8): a request row, one merged row, a cancel, or an
 * intent row. Each expects every observed row of the record unchanged and the new id absent.
 */

/**
 * Fields that belong to one attempt of a row and never carry over to a new request. `conflict`
 * is not one of them: a merge keeps the evidence of what the row overwrites (§6, §10).
 */
const ATTEMPT_FIELDS = [
  'claim',
  'sentAt',
  'deferredAt',
  'nextAttemptAt',
  'heldAt',
  'blockedAt',
  'blockedCode',
  'blockedDetail',
  'evidence',
  'writer',
  'request',
  'successorOf',
] as const;

function withoutAttempt(row: OutboxRow): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...row };
  for (const field of ATTEMPT_FIELDS) delete copy[field];
  return copy;
}

/** The intent a row (or a new intent) carries, as a handler sees it. */
function intentInfoOf(row: {
  collection: string;
  kind: string;
  targetId: string;
  payload?: Json;
  baseRevision?: number | null;
}): IntentInfo {
  return {
    collection: row.collection,
    kind: row.kind,
    targetId: row.targetId,
    payload: row.payload,
    baseRevision: row.baseRevision,
  };
}

function expectAll(chain: Observed[], newId: string): ReplacePlan['expected'] {
  return [...chain.map(({ row, raw }) => ({ id: row.id, row: raw })), { id: newId, row: null }];
}

/**
 * The record as the enqueue read it, checked in its write transaction (§6). Expecting the rows
 * it saw unchanged is not enough: a row another edit added meanwhile is not among them, and two
 * edits planned on the same empty record would both land, neither merged nor linked (G4).
 */
function recordAsRead(
  collection: string,
  targetId: string,
  ctx: EnqueueContext,
): Pick<ReplacePlan, 'records'> {
  return ctx.recordKeys === undefined
    ? {}
    : { records: [{ collection, targetId, ids: [...ctx.recordKeys] }] };
}

/**
 * A row carrying a request for the intent: a new row, a successor (`place.successorOf`), or the
 * merged row taking an older row's place (`place.savedAt`, `place.base`).
 */
export function planRequestRow(
  intent: NewIntent & { targetId: string },
  place: {
    savedAt: number;
    successorOf: string | undefined;
    base?: Record<string, unknown>;
    baseRevision?: number | null;
  },
  chain: Observed[],
  replaced: Observed[],
  ctx: EnqueueContext,
  outcome: EnqueueResult['outcome'],
): EnqueuePlan {
  const baseRevision =
    place.baseRevision !== undefined ? place.baseRevision : (intent.baseRevision ?? null);
  const intentInfo: IntentInfo = { ...intentInfoOf(intent), baseRevision };
  let request: OutboxRow['request'];
  try {
    request = buildRowRequest(ctx.handler.toRequest(intentInfo), intent.id, baseRevision);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // The handler could not make a request of it: the intent as a whole is what it refused.
    return {
      kind: 'reject',
      code: 'invalid_intent',
      message,
      issues: [{ path: '(root)', message }],
    };
  }
  const row: OutboxRow = {
    ...place.base,
    v: 1,
    id: intent.id,
    owner: ctx.owner,
    collection: intent.collection,
    kind: intent.kind,
    targetId: intent.targetId,
    savedAt: place.savedAt,
    state: 'queued',
    ...(intent.payload === undefined ? {} : { payload: intent.payload }),
    baseRevision,
    request,
    ...(place.successorOf === undefined ? {} : { successorOf: place.successorOf }),
    ...(intent.meta === undefined ? {} : { meta: intent.meta }),
    ...(intent.evidence === undefined ? {} : { evidence: intent.evidence }),
  };
  return planRowWrite(
    row,
    { id: row.id, requestId: request.requestId, targetId: row.targetId, outcome },
    chain,
    replaced,
    ctx,
  );
}

/** Folds the record's open rows (none in flight, §6) and the new intent into one row, or cancels them all. */
export function planMergedRow(
  intent: NewIntent & { targetId: string },
  others: Observed[],
  chain: Observed[],
  ctx: EnqueueContext,
  /** The row the merged rows go after, when the oldest of them names none (§6, G4). */
  after?: string,
): EnqueuePlan {
  const first = others[0]!.row;
  let merged: IntentInfo = intentInfoOf(first);
  const fresh = intentInfoOf(intent);
  for (const next of [...others.slice(1).map(({ row }) => intentInfoOf(row)), fresh]) {
    const result = mergeIntents(merged, next, ctx.handler);
    if (result.kind === 'target_deleted') {
      return {
        kind: 'reject',
        code: 'target_deleted',
        message: `${intent.targetId} has a delete queued.`,
      };
    }
    // A cancel is of the pair (§6): rows already queued that cancel each other are not the new
    // edit's to drop, so it goes after them as a kind without merge rules would.
    if (result.kind === 'keep_both' || (result.kind === 'cancel' && next !== fresh)) {
      // An edit of a create not applied yet has no server id to address: it is an intent,
      // converted on the create's receipt (§8), whatever the create's state.
      const createId = pendingCreateId(intent.targetId);
      if (createId !== undefined) return planIntentRow(intent, createId, chain, ctx);
      // Kinds without merge rules stay separate, in order: the new row follows the last one.
      const last = chain[chain.length - 1]!.row;
      return planRequestRow(
        intent,
        { savedAt: ctx.now, successorOf: last.id },
        chain,
        [],
        ctx,
        'successor',
      );
    }
    if (result.kind === 'cancel') return planCancel(intent, others, chain, ctx);
    checkMerged(merged, result.intent, ctx.handler?.kinds);
    merged = { ...merged, ...result.intent };
  }
  return planRequestRow(
    {
      ...intent,
      kind: merged.kind,
      payload: merged.payload as Json,
      meta: intent.meta ?? first.meta,
    },
    {
      savedAt: first.savedAt,
      successorOf: first.successorOf ?? after,
      base: { ...withoutAttempt(first), ...conflictOf(others) },
      baseRevision: first.baseRevision ?? intent.baseRevision ?? null,
    },
    chain,
    others,
    ctx,
    'coalesced',
  );
}

/**
 * The conflict evidence a merged row carries on (§6, G5): the oldest one among the rows it
 * absorbs, so the ledger entry is still written when the merged row settles.
 */
function conflictOf(absorbed: Observed[]): Pick<OutboxRow, 'conflict'> {
  const conflict = absorbed.find(({ row }) => row.conflict !== undefined)?.row.conflict;
  return conflict === undefined ? {} : { conflict };
}

/**
 * create+delete before the create could have been applied: nothing is sent, the open rows and
 * the new one are tombstoned. Rows that must stay (§6) are only expected unchanged.
 */
function planCancel(
  intent: NewIntent & { targetId: string },
  cancelled: Observed[],
  chain: Observed[],
  ctx: EnqueueContext,
): EnqueuePlan {
  const ids = [...cancelled.map(({ row }) => row.id), intent.id];
  return {
    kind: 'write',
    result: { id: intent.id, targetId: intent.targetId, outcome: 'cancelled' },
    plan: {
      owner: ctx.owner,
      expected: expectAll(chain, intent.id),
      ...recordAsRead(intent.collection, intent.targetId, ctx),
      delete: cancelled.map(({ row }) => row.id),
      ...ledgerChanges(cancelled.map(({ row }) => row)),
      tombstones: ids.map((id) => ({
        id,
        owner: ctx.owner,
        reason: 'cancelled' as const,
        at: ctx.now,
      })),
      durability: 'strict',
      reason: 'enqueue',
    },
  };
}

/**
 * An edit of a create whose outcome is unknown: an intent row, merged with earlier intents (§8).
 * With `fold: false` (the create vanished and its record is not known yet) it is linked after the
 * last intent instead (after the create, when that intent is blocked), in `seq` order after
 * whatever was made meanwhile.
 */
export function planIntentRow(
  intent: NewIntent & { targetId: string },
  createId: string,
  chain: Observed[],
  ctx: EnqueueContext,
  { fold = true }: { fold?: boolean } = {},
): EnqueuePlan {
  // A quarantined value shaped like an intent is not one: never merged, never linked (G7).
  const intents = chain.filter(
    ({ row }) => isIntentRow(row) && !isQuarantined(row) && !isUnknownVersion(row),
  );
  let kind = intent.kind;
  let payload = intent.payload;
  let savedAt = ctx.now;
  let base: Record<string, unknown> = {};
  const replaced: Observed[] = [];
  const last = intents[intents.length - 1];
  let successorOf = createId;
  if (last !== undefined && !fold) {
    // A blocked intent holds nothing (§7): the new one is an orphan of its own, resolved on its
    // own, instead of waiting for the app to retry or discard the blocked one.
    successorOf = last.row.state === 'blocked' ? createId : last.row.id;
  } else if (last !== undefined) {
    const result = mergeIntents(intentInfoOf(last.row), intentInfoOf(intent), ctx.handler);
    if (result.kind === 'target_deleted')
      return {
        kind: 'reject',
        code: 'target_deleted',
        message: `${intent.targetId} has a delete queued.`,
      };
    if (result.kind === 'merged') {
      checkMerged(intentInfoOf(last.row), result.intent, ctx.handler?.kinds);
      ({ kind, payload } = { kind: result.intent.kind, payload: result.intent.payload });
      savedAt = last.row.savedAt;
      base = withoutAttempt(last.row);
      successorOf = last.row.successorOf ?? createId;
      replaced.push(last);
    } else {
      successorOf = last.row.id;
    }
  }
  const row: OutboxRow = {
    ...base,
    v: 1,
    id: intent.id,
    owner: ctx.owner,
    collection: intent.collection,
    kind,
    targetId: intent.targetId,
    savedAt,
    state: 'queued',
    ...(payload === undefined ? {} : { payload }),
    baseRevision: intent.baseRevision ?? null,
    successorOf,
    ...(intent.meta === undefined ? {} : { meta: intent.meta }),
  };
  return planRowWrite(
    row,
    { id: row.id, targetId: row.targetId, outcome: 'intent' },
    chain,
    replaced,
    ctx,
  );
}

/**
 * The row's place in its owner's commit order (§6.1): a new row takes a fresh `seq` from the
 * store; a merged row keeps the smallest `seq` of the rows it replaces. One that replaces only
 * rows without `seq` (a legacy writer's) takes a fresh one: those rows were committed after every
 * row of the record with a `seq` they were not linked to — an edit that saw one would have linked
 * to it or merged it — so now is their place too, and the merged row goes in `seq` order after
 * them instead of waiting on clocks.
 */
function placeOf(row: OutboxRow, replaced: Observed[]): Pick<ReplacePlan, 'put' | 'seq'> {
  const { seq: _carried, ...rest } = row;
  const seqs = replaced.flatMap(({ row: r }) => (r.seq === undefined ? [] : [r.seq]));
  if (seqs.length === 0) return { put: [rest], seq: [row.id] };
  return { put: [{ ...rest, seq: Math.min(...seqs) }] };
}

/**
 * One new row replacing the rows it absorbed (tombstoned into it), strictly durable (§3). The
 * whole row counts against `maxRowBytes` — payload, meta and request alike, whatever the kind:
 * a delete or an intent row stores its payload too.
 */
function planRowWrite(
  row: OutboxRow,
  result: EnqueueResult,
  chain: Observed[],
  replaced: Observed[],
  ctx: EnqueueContext,
): EnqueuePlan {
  const bytes = new TextEncoder().encode(JSON.stringify(row)).length;
  if (bytes > ctx.maxRowBytes) {
    return {
      kind: 'reject',
      code: 'row_too_large',
      message: `The row would take ${bytes} bytes; maxRowBytes is ${ctx.maxRowBytes}.`,
    };
  }
  return {
    kind: 'write',
    result,
    plan: {
      owner: ctx.owner,
      expected: expectAll(chain, row.id),
      ...recordAsRead(row.collection, row.targetId, ctx),
      ...placeOf(row, replaced),
      delete: replaced.map(({ row: r }) => r.id),
      // The rows it absorbs were never applied (§6); what it carries of their evidence is its own.
      ...ledgerChanges(
        replaced.map(({ row: r }) => r),
        [row],
      ),
      tombstones: replaced.map(({ row: r }) => ({
        id: r.id,
        owner: ctx.owner,
        reason: 'coalesced' as const,
        into: row.id,
        at: ctx.now,
      })),
      durability: 'strict',
      reason: 'enqueue',
    },
  };
}
