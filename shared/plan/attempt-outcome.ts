import { traitsOf } from '../model/error-codes.ts';
import type { OutboxRow } from '../model/row.ts';
import { wasAttempted } from './in-flight.ts';

/**
 * What is known of whether a row's request took effect on the server (SPEC §6): it was never
 * sent; every answer it got said the server applied nothing; or it may have been applied — it
 * got no answer (a network error, a timeout, a holder that died mid-send), a 5xx that may follow
 * a commit, a 409 `request-in-progress`, or a 2xx whose handling failed (`handler_failed`). Only
 * the first two may be merged or cancelled: merging the third would apply its intent a second
 * time under a new key (G2).
 */
export type AttemptOutcome = 'unsent' | 'not_applied' | 'unknown';

/**
 * Whether an attempt that ended with `code` is known to have applied nothing: the codes the
 * table marks so (the server refused before or instead of applying, nothing left the device, an
 * intent that carries no request yet), and 4xx answers other than 409 `request-in-progress` (its
 * own code) and 503 (§6); a 429 is a 4xx. Any other code — 500, 502, 504, `network`, `timeout`,
 * `handler_failed`, a code an app's classifier made up — may follow an effect.
 */
export function appliedNothing(code: string): boolean {
  return (
    traitsOf(code)?.appliedNothing === true || code === 'http_503' || /^http_4\d\d$/.test(code)
  );
}

/**
 * The evidence of an attempt made before its row existed (a Workbox route's own request, §22),
 * dated by the enqueue that follows it: counted as the key's first attempt, so a code that does
 * not rule out an effect keeps the row from being merged or cancelled (§6) and has its key asked
 * about past the server's retention (§15).
 */
export function evidenceOfAttempt(code: string, at: number): NonNullable<OutboxRow['evidence']> {
  return {
    attemptCount: 1,
    lastAttemptAt: at,
    firstAttemptAt: at,
    lastErrorCode: code,
    ...(appliedNothing(code) ? {} : { mayHaveApplied: true }),
  };
}

/**
 * What is known of the row's effect. `evidence.mayHaveApplied` keeps an unknown outcome for the
 * row's life: a later answer that applied nothing (a 401 or 503 checked before the server's
 * ledger) does not say an earlier attempt of the same key did not. A row still `sending` after
 * its claim ended was never settled: its request may have left; so may one a legacy tab sent
 * and put back.
 */
export function attemptOutcome(row: OutboxRow): AttemptOutcome {
  if (!wasAttempted(row)) return 'unsent';
  if (row.evidence?.mayHaveApplied === true || row.state === 'sending') return 'unknown';
  // Settling an attempt always drops `sentAt`: a row back in the queue with its `sentAt` was sent
  // by a writer that records no outcome — a legacy tab (§17) — and may have been applied.
  if (row.sentAt !== undefined) return 'unknown';
  const code = row.evidence?.lastErrorCode;
  return code !== undefined && appliedNothing(code) ? 'not_applied' : 'unknown';
}
