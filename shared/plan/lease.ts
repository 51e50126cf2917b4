import type { SendDeadline } from '../model/ports.ts';
import type { Claim, OutboxRow } from '../model/row.ts';

/**
 * How long a claim holds its row (SPEC §4 table, `claim.expiresAt = now + lease`): long enough
 * for one request to leave and come back, short enough that a row whose holder died (a worker
 * stopped mid-send) is taken over soon. There is no renewal: one attempt is one request.
 */
export const DEFAULT_LEASE_MS = 10_000;

/**
 * The default safety margin before a claim's end, as a share of the lease (SPEC §4 "No request
 * leaves after its lease"): clocks of holders differ, so a request leaves only while its claim is
 * still well ahead, never in its last moments.
 */
const SEND_MARGIN_SHARE = 0.2;

/** When a claim taken at `now` ends (SPEC §4 table): the `claim.expiresAt` it writes. */
export function claimExpiry(now: number, leaseMs: number): number {
  return now + leaseMs;
}

/**
 * When the lease a row is sent under ends, by whoever sends it (SPEC §4 "In flight"): a v1
 * writer's `claim.expiresAt`, or, for a legacy v0 writer that knows nothing of claims, `sentAt`
 * plus the lease; the later of the two when both are there (a v0 tab may rewrite a v1 row,
 * keeping its old claim). `-Infinity` when the row carries neither.
 */
export function leaseEnd(row: OutboxRow, leaseMs: number): number {
  const claimEnd =
    row.writer !== undefined && row.claim !== undefined ? row.claim.expiresAt : -Infinity;
  // A claim's `sentAt` is its millisecond plus half of one (§17, `claimedAt`): the lease runs
  // from the millisecond.
  const legacyEnd = row.sentAt !== undefined ? Math.floor(row.sentAt) + leaseMs : -Infinity;
  return Math.max(claimEnd, legacyEnd);
}

/**
 * The deadline a claimed request is sent under (SPEC §4): it leaves only while
 * `expiresAt − margin` is ahead by the holder's clock, and is aborted at `expiresAt`. Everything
 * awaited between the claim and the wire counts against it, so no request is still travelling
 * when another holder (or a coalesced edit) may act on the row (G3, G4).
 */
export function sendDeadline(
  claim: Pick<Claim, 'expiresAt'>,
  ctx: { leaseMs: number; marginMs?: number },
): SendDeadline {
  const margin = Math.max(0, ctx.marginMs ?? ctx.leaseMs * SEND_MARGIN_SHARE);
  return { leaveBy: claim.expiresAt - margin, abortAt: claim.expiresAt };
}

/**
 * Whether a claimed request may no longer leave (SPEC §4 "No request leaves after its lease"):
 * its deadline passed, or it waited for a send slot more than half its lease since it was
 * claimed (`sentAt`) — a claim that waited that long is not spent on a request that could
 * outlive it; it goes back to the queue instead.
 */
export function isLeaseLapsed(
  row: Pick<OutboxRow, 'sentAt'>,
  now: number,
  leaseMs: number,
  leaveBy: number,
): boolean {
  return now - row.sentAt! > leaseMs / 2 || now >= leaveBy;
}
