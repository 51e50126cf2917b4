import type { ErrorCode } from '../model/errors.ts';
import type { CollectionHandler } from '../model/handler.ts';
import { isIntentRow, type Observed, type OutboxRow } from '../model/row.ts';
import type { ReplacePlan, RowKey } from '../model/store.ts';
import { attemptOutcome } from './attempt-outcome.ts';
import { ledgerChanges } from './conflict-ledger.ts';
import { buildRowRequest } from './identity.ts';
import { supersedes } from './made-order.ts';
import { isUnknownVersion } from './unknown-version.ts';

/**
 * The state changes an app makes by hand (SPEC §13): `resumeHeld` after it refreshed its
 * credentials, `retry` and `discard` of a blocked row. Like every other change they are plans
 * the store applies in one `replace` against the row as observed (§3).
 */

/** A manual action's plan, or why it cannot be done, as an error code with its details. */
export type ManualPlan =
  | { kind: 'apply'; plan: ReplacePlan }
  | { kind: 'refuse'; code: ErrorCode; message?: string; details: Record<string, unknown> };

/**
 * Queues a held row again (§5 `auth`). With `only`, just the rows held for that reason
 * (`evidence.lastErrorCode`): `setAuth` lets go the rows held for want of credentials but not
 * those a server answered 401. Undefined when the row is not one to resume.
 */
export function planResumeHeld(
  { row, raw }: Observed,
  ctx: { owner: string; only?: { code: string } },
): ReplacePlan | undefined {
  if (row.state !== 'held' || isUnknownVersion(row)) return undefined;
  if (ctx.only !== undefined && row.evidence?.lastErrorCode !== ctx.only.code) return undefined;
  const { heldAt: _h, nextAttemptAt: _n, ...rest } = row;
  return {
    owner: ctx.owner,
    expected: [{ id: row.id, row: raw }],
    put: [{ ...rest, state: 'queued' }],
    reason: 'resume',
  };
}

/** What `retry` reads before it plans (§13). */
export interface RetryContext {
  owner: string;
  /**
   * A row of the record on the wire now — an edit that went past this one while it was
   * blocked. The retried row queues after it: never two rows of a record in flight (G4).
   */
  inFlight?: Observed;
  /** The other rows of the record, as read with `inFlight`. */
  record?: readonly Observed[];
  /** Every key the record held at that read, this row's and unreadable values' included. */
  recordKeys?: readonly RowKey[];
  /**
   * For a row blocked `retention_exceeded` (§15): its handler and the request id its new
   * request takes. Its old key is forgotten by the server, so it goes as a new request.
   */
  reissue?: { handler: CollectionHandler; requestId: string };
}

/**
 * Queues a blocked row again, with its request, key and fence unchanged: the server replays the
 * answer if it had applied it (G2). A quarantined corrupt row has nothing to send and is refused.
 *
 * Once a later edit of the record was, or may have been, applied past the row (`overtakenBy`; an
 * edit of unknown outcome, on the wire at the retry among them), the retry meets it through the
 * conflict rule (§6.1, §10) with what the server really answers, and is never merged: a row with a
 * revision check goes as it is, and the server's answer to its stale `If-Match` (a 412) is what
 * the conflict rule runs on. A row the server refused that has no revision check would land
 * over that edit unchecked (G4): it stays blocked as `revision_conflict`, with no evidence of an
 * answer the server never gave, for the app to resolve with a new edit or a discard.
 */
export function planRetry({ row, raw }: Observed, ctx: RetryContext): ManualPlan {
  if (row.state !== 'blocked')
    return { kind: 'refuse', code: 'not_blocked', details: { id: row.id, state: row.state } };
  if (row.blockedCode === 'row_corrupt') {
    return {
      kind: 'refuse',
      code: 'not_blocked',
      message: 'A corrupt row cannot be retried; inspect its raw value, then discard it.',
      details: { id: row.id },
    };
  }
  if (row.blockedCode === 'retention_exceeded') return planReissue({ row, raw }, ctx);
  // A later edit of the record that may already have been applied with no ACK to mark the row
  // overtaken yet (§6.1): any of unknown outcome — its answer lost, on the wire now (the server
  // may have applied it, its answer on the way back), or sent by a holder that died before its
  // answer. The row carries the mark from here on.
  const madeLater = (other: OutboxRow) =>
    other.seq !== undefined && row.seq !== undefined && other.seq > row.seq;
  const mayOvertake =
    row.overtakenBy ??
    [...(ctx.record ?? []), ...(ctx.inFlight ? [ctx.inFlight] : [])].find(
      (other) => madeLater(other.row) && attemptOutcome(other.row) === 'unknown',
    )?.row.id;
  const mark = mayOvertake === undefined ? {} : { overtakenBy: mayOvertake };
  if (
    mayOvertake !== undefined &&
    row.baseRevision == null &&
    attemptOutcome(row) === 'not_applied'
  )
    return {
      kind: 'apply',
      plan: {
        owner: ctx.owner,
        expected: [{ id: row.id, row: raw }],
        put: [
          {
            ...row,
            ...mark,
            blockedCode: 'revision_conflict',
            blockedDetail: `A later edit (${mayOvertake}) was or may have been applied; this request has no revision to check.`,
          },
        ],
        reason: 'retry',
      },
    };
  return { kind: 'apply', plan: queuedAgain({ row, raw }, ctx, mark) };
}

/**
 * `retry` of a row whose key the server forgot (§15 `retention_exceeded`): the same intent as a
 * new request — a new key and fingerprint, its `If-Match` still the revision it was made from —
 * so the server's revision check decides, and a 412 goes through the conflict rule (§10) with
 * what the server really answered. Its evidence starts anew: nothing of the new key has left.
 * Like any retry it queues behind an edit of its record on the wire (G4).
 */
function planReissue({ row, raw }: Observed, ctx: RetryContext): ManualPlan {
  if (ctx.reissue === undefined || row.request === undefined)
    return {
      kind: 'refuse',
      code: 'unknown_collection',
      message: 'No handler can make a new request of this row; discard it.',
      details: { id: row.id, collection: row.collection },
    };
  const baseRevision = row.baseRevision ?? null;
  const request = buildRowRequest(
    ctx.reissue.handler.toRequest({
      collection: row.collection,
      kind: row.kind,
      targetId: row.targetId,
      payload: row.payload,
      baseRevision,
    }),
    ctx.reissue.requestId,
    baseRevision,
  );
  return {
    kind: 'apply',
    plan: queuedAgain({ row, raw }, ctx, {
      request,
      // Nothing of the new key has left, but the old one may have been applied: the row is never
      // merged nor cancelled (§6, G2), and a create of it goes even if deleted after.
      evidence: { attemptCount: 0, lastErrorCode: 'retention_exceeded', mayHaveApplied: true },
    }),
  };
}

/**
 * The retried row queued again with `changes`, its block gone (§13). A retry is the app's new
 * decision: ordered as made now (§6.1), after the row of its record on the wire if any — never two
 * in flight (G4) — and the rows that waited on it no longer do. It holds only while the record is
 * as read.
 */
function queuedAgain(
  { row, raw }: Observed,
  ctx: RetryContext,
  changes: Partial<OutboxRow>,
): ReplacePlan {
  const { blockedAt: _a, blockedCode: _c, blockedDetail: _d, nextAttemptAt: _n, ...rest } = row;
  // A row a newer edit overtook keeps that mark until it meets the server: merged into a later
  // edit, its fields would land over that newer edit at the later edit's revision, unchecked (G4).
  const after = ctx.inFlight === undefined ? {} : { successorOf: ctx.inFlight.row.id };
  return asRead(
    {
      owner: ctx.owner,
      expected: [{ id: row.id, row: raw }],
      put: [{ ...rest, ...after, state: 'queued', ...changes }, ...releasedBy(row, ctx.record)],
      seq: [row.id],
      reason: 'retry',
    },
    ctx.record,
    row,
    ctx.recordKeys,
  );
}

/**
 * A retry planned from a read of its record holds only while the record is as read: an edit of
 * it claimed in between is in flight, and the retried row must queue after it (G4).
 */
function asRead(
  plan: ReplacePlan,
  record: readonly Observed[] | undefined,
  row: OutboxRow,
  keys: readonly RowKey[] = [row.id, ...(record ?? []).map((o) => o.row.id)],
): ReplacePlan {
  if (record === undefined) return plan;
  const seen = new Set(plan.expected.map((e) => e.id));
  return {
    ...plan,
    expected: [
      ...plan.expected,
      ...record.filter((o) => !seen.has(o.row.id)).map((o) => ({ id: o.row.id, row: o.raw })),
    ],
    // And no row of it added since: one committed in between was made before the retry, and
    // must take its place before it (§6.1).
    records: [
      {
        collection: row.collection,
        targetId: row.targetId,
        ids: [...keys],
      },
    ],
  };
}

/**
 * The rows of the record that wait on the retried row (or on the rows it stands for),
 * with that link taken off. A retry is ordered as made at the retry (§6.1): the edits made before
 * it go first — it no longer goes before them — and one of them on the wire now is what the
 * retried row itself follows. Intents keep theirs: their link names the create they wait on (§8).
 */
function releasedBy(retried: OutboxRow, record: readonly Observed[] = []): OutboxRow[] {
  // A link to the rows a conflict successor stands for is a link to it (§10).
  const ids = new Set([retried.id, ...supersedes(retried)]);
  return record.flatMap(({ row }) => {
    if (row.successorOf === undefined || !ids.has(row.successorOf) || isIntentRow(row)) return [];
    const { successorOf: _link, ...rest } = row;
    return [rest];
  });
}

/**
 * Removes a blocked or held row for good, tombstoned as `discarded` (G1: an explicit app call).
 * A discarded create takes the other rows of its record along — its intents could never be sent
 * (§8) — so `record` is read for a create and ignored otherwise. A discarded resend that may have
 * been applied (`handler_failed`, no answer) keeps its ledger entry: discarding takes back
 * nothing the server did (G5). One known to have applied nothing takes its entry along.
 */
export function planDiscard(
  { row, raw }: Observed,
  record: readonly Observed[],
  ctx: { owner: string; now: number },
): ManualPlan {
  if (row.state !== 'blocked' && row.state !== 'held')
    return { kind: 'refuse', code: 'not_blocked', details: { id: row.id, state: row.state } };
  const taken = row.kind === 'create' ? record.filter((other) => other.row.id !== row.id) : [];
  const rows = [row, ...taken.map((other) => other.row)];
  const ids = rows.map((r) => r.id);
  const unknown = (r: OutboxRow) => attemptOutcome(r) === 'unknown';
  return {
    kind: 'apply',
    plan: {
      owner: ctx.owner,
      expected: [
        { id: row.id, row: raw },
        ...taken.map((other) => ({ id: other.row.id, row: other.raw })),
      ],
      delete: ids,
      ...ledgerChanges(
        rows.filter((r) => !unknown(r)),
        rows.filter(unknown),
      ),
      tombstones: ids.map((id) => ({
        id,
        owner: ctx.owner,
        reason: 'discarded' as const,
        at: ctx.now,
      })),
      durability: 'strict',
      reason: 'discard',
    },
  };
}
