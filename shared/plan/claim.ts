import type { Observed, OutboxRow } from '../model/row.ts';
import type { Expectation, ReplacePlan, RowKey } from '../model/store.ts';
import { attemptOutcome } from './attempt-outcome.ts';
import { isRowInFlight } from './in-flight.ts';
import { firstAttemptOf } from './key-retention.ts';
import { claimExpiry } from './lease.ts';
import { isUnknownVersion } from './unknown-version.ts';

/** What a claim needs to know about the claiming holder (SPEC §4). */
export interface ClaimContext {
  owner: string;
  holderId: string;
  now: number;
  leaseMs: number;
  bundle: string;
}

/**
 * A record as the selection saw it: its other rows, the keys of all its rows, and its blocked
 * rows the claimed row goes past that no mark says so yet (`overtaken`).
 */
export interface RecordSeen {
  expected: Expectation[];
  ids: RowKey[];
  passes?: Observed[];
}

/** A claim to commit, or why the row is not this holder's to take now. */
export type ClaimPlan =
  | { kind: 'claim'; plan: ReplacePlan; row: OutboxRow; fence: number }
  | { kind: 'skip'; reason: 'in_flight' | 'not_queued' | 'no_request' | 'other_owner' };

/**
 * Plans taking one row: a compare-and-swap on the row as observed that writes this holder's
 * claim with the next fence. If another holder got there first the replace is `stale`.
 */
export function planClaim(
  current: OutboxRow,
  raw: unknown,
  ctx: ClaimContext,
  /**
   * The other rows of its record as the selection saw them (§6.1, §7): the claim holds only while
   * the record is exactly as seen — no row of it claimed meanwhile by another holder, none added,
   * none retried — the selection's test made again inside the claim's transaction.
   */
  record?: RecordSeen,
): ClaimPlan {
  if (current.owner !== ctx.owner) return { kind: 'skip', reason: 'other_owner' };
  if (isUnknownVersion(current)) return { kind: 'skip', reason: 'not_queued' };
  if (current.request === undefined) return { kind: 'skip', reason: 'no_request' };
  if (current.state !== 'queued' && current.state !== 'sending')
    return { kind: 'skip', reason: 'not_queued' };
  if (isRowInFlight(current, ctx.now, ctx.leaseMs)) return { kind: 'skip', reason: 'in_flight' };
  // Fences only grow while a row lives (G3): the next claim is always previous + 1.
  const fence = (current.claim?.fence ?? 0) + 1;
  // What earlier attempts left unknown stays known for the row's life (§6), whatever this attempt
  // ends with — say it sends nothing because its deadline passed. The claim is where it is kept:
  // a row still `sending` whose holder died or could not store the answer, or one a legacy tab
  // sent and put back, carries no outcome of its own, and settling this attempt rewrites both.
  const unsettled = attemptOutcome(current) === 'unknown' ? { mayHaveApplied: true } : {};
  const { nextAttemptAt: _next, ...rest } = current;
  const row: OutboxRow = {
    ...rest,
    v: 1,
    state: 'sending',
    sentAt: claimedAt(ctx.now),
    claim: {
      ...current.claim,
      holderId: ctx.holderId,
      expiresAt: claimExpiry(ctx.now, ctx.leaseMs),
      fence,
    },
    evidence: {
      ...current.evidence,
      attemptCount: (current.evidence?.attemptCount ?? 0) + 1,
      lastAttemptAt: ctx.now,
      // The key's age, against the server's retention (§15), counts from the first attempt the
      // server may have kept: attempts all answered "applied nothing" left it nothing to forget.
      firstAttemptAt:
        attemptOutcome(current) === 'unknown' ? (firstAttemptOf(current) ?? ctx.now) : ctx.now,
      ...unsettled,
    },
    writer: { ...current.writer, bundle: ctx.bundle, at: claimedAt(ctx.now) },
  };
  return {
    kind: 'claim',
    row,
    fence,
    plan: {
      owner: ctx.owner,
      expected: [{ id: current.id, row: raw }, ...(record?.expected ?? [])],
      ...(record === undefined
        ? {}
        : {
            records: [
              { collection: current.collection, targetId: current.targetId, ids: record.ids },
            ],
          }),
      // Blocked rows of the record this claim goes past are marked with it (§6, §7, G4): from
      // now on its edit may be applied past them, whoever settles it — a legacy tab that
      // resends and deletes it marks nothing — so none of them is merged into a later edit.
      put: [
        row,
        ...(record?.passes ?? []).map((passed) => ({
          ...passed.row,
          overtakenBy: current.request!.requestId,
        })),
      ],
      reason: 'claim',
    },
  };
}

/** Whether this holder still owns the claim it took with `fence` (SPEC §5). */
export function isClaimMine(
  row: OutboxRow | undefined,
  holderId: string,
  fence: number,
): row is OutboxRow {
  return row?.claim !== undefined && row.claim.holderId === holderId && row.claim.fence === fence;
}

/**
 * The `sentAt` and `writer.at` a claim writes (§4, §17): the clock reading's millisecond plus
 * half of one. A legacy tab writes `sentAt` from `Date.now()`, a whole millisecond, so its send is
 * told apart from the claim even in the same millisecond (its rewrite would otherwise leave the
 * row exactly as the claim left it).
 */
export function claimedAt(now: number): number {
  return Math.floor(now) + 0.5;
}

/**
 * Whether a legacy v0 tab sent the row after this bundle's last claim of it (SPEC §17): a claim
 * writes `sentAt` and `writer.at` from one clock reading ({@link claimedAt}); a v0 tab, which
 * keeps the fields it does not know, rewrites only `sentAt`, with a whole millisecond. That tab's
 * copy may be applied whatever this holder's own attempt was told, so the row is no longer this
 * holder's to settle as failed (G2).
 */
export function sentByLegacySinceClaim(row: OutboxRow): boolean {
  return row.sentAt !== undefined && row.writer !== undefined && row.sentAt !== row.writer.at;
}
