import type { OutboxRow } from '../model/row.ts';
import { attemptOutcome } from './attempt-outcome.ts';
import { wasAttempted } from './in-flight.ts';

/**
 * SPEC §15 "A key is only safe while the server remembers it": a server's ledger forgets a key
 * after its retention, and a resend of a request that was applied is then applied again (G2).
 * A row whose request may have been applied is resent under its key only while its first attempt
 * is younger than the published retention less a margin; past that, the receipt lookup is asked
 * first, and a key the server no longer knows blocks the row (`retention_exceeded`).
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** The retention assumed of a server that published none (SPEC §15: at least 7 days). */
export const ASSUMED_RETENTION_MS = 7 * DAY_MS;

/**
 * How long a key may be resent after its first attempt: the retention less one day (6 days
 * when nothing was published). A retention of a week or less keeps six sevenths of itself, so a
 * server configured short (tests, a demo) still leaves a window.
 */
export function keyLifetime(retentionMs: number | undefined): number {
  const retention = retentionMs ?? ASSUMED_RETENTION_MS;
  return retention - Math.min(DAY_MS, retention / 7);
}

/**
 * When the row's current key first left in a way the server may have kept: `evidence.firstAttemptAt`,
 * written by the first claim since every earlier attempt was answered "applied nothing".
 * A row attempted by a writer that records none (a legacy tab, an older bundle) is dated by its
 * `savedAt`, which is no later than any attempt: asking the lookup too early only costs a lookup.
 */
export function firstAttemptOf(row: OutboxRow): number | undefined {
  const recorded = row.evidence?.firstAttemptAt;
  if (typeof recorded === 'number') return recorded;
  if (!newKeyAttempted(row)) return undefined;
  return wasAttempted(row) ? row.savedAt : undefined;
}

/**
 * A request re-issued under a new key (§15 `retention_exceeded`) counts its attempts anew: its
 * new key has left only once a writer sent it. The claim counts its attempt; a legacy tab, which
 * counts none, leaves the `sentAt` of its send — and a settled attempt of the old key left none.
 */
function newKeyAttempted(row: OutboxRow): boolean {
  return row.evidence?.attemptCount !== 0 || row.sentAt !== undefined;
}

/**
 * What to do with a row selected for sending (as observed before its claim): `send` under its
 * key, or `ask` the receipt lookup first because the server may have forgotten the key of a
 * request it may have applied. Rows never attempted, or answered with a definite "not applied",
 * go at any age: nothing of theirs can be applied twice.
 */
export function planKeyAge(
  row: OutboxRow,
  ctx: { now: number; retentionMs: number | undefined },
): 'send' | 'ask' {
  if (!mayHaveAppliedKey(row)) return 'send';
  const first = firstAttemptOf(row);
  if (first === undefined) return 'send';
  return ctx.now - first >= keyLifetime(ctx.retentionMs) ? 'ask' : 'send';
}

/**
 * Whether the row's key may have been applied, so its age matters at all: most rows' does not,
 * and the send path reads no retention for them.
 */
export function mayHaveAppliedKey(row: OutboxRow): boolean {
  // Until a re-issued request's new key has left, what its old key may have done keeps the row
  // from being merged (`mayHaveApplied`), not its new key from going.
  return attemptOutcome(row) === 'unknown' && newKeyAttempted(row);
}
