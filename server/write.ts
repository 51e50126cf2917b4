import { HEADER, MAX_REVISION, PROBLEM, parseRevisionTag } from 'sw-outbox/wire';
import { EMPTY_BODY_DIGEST, parseContentDigest } from './fingerprint.ts';
import {
  answerCompleted,
  answerInflight,
  type CheckContext,
  fingerprintOf,
  type LedgerLookup,
  type WriteRequest,
} from './idempotency.ts';
import { type Answer, problemAnswer } from './problem.ts';

/**
 * `If-Match` of an update or delete: the revision, or the answer that refuses it (428 when
 * absent, 400 when not `"<revision>"` with a revision from 0 to {@link MAX_REVISION}). A larger
 * number names no revision any adapter can hold (PostgreSQL's `integer`), so it is malformed,
 * not a conflict: every adapter gives the same permanent answer instead of one failing at the
 * driver.
 */
export function requireRevision(headers: WriteRequest['headers']): number | Answer {
  const header = headers[HEADER.ifMatch];
  if (header === undefined) return problemAnswer(428, PROBLEM.preconditionRequired);
  const revision = typeof header === 'string' ? parseRevisionTag(header) : undefined;
  if (revision === undefined || revision > MAX_REVISION) {
    return problemAnswer(400, PROBLEM.ifMatchMalformed, {
      detail: `expected "<revision>", a revision from 0 to ${MAX_REVISION}`,
    });
  }
  return revision;
}

/** Check 2's verdict: the answer that ends the request, or the fingerprint it holds its key with. */
export type AfterValidation =
  | { kind: 'answer'; answer: Answer }
  | { kind: 'held'; fingerprint: string };

/**
 * Check 2 of SPEC §15 (after validation, before the work) and the claim of the key in this
 * process. On `held` the key is held in `ctx.inflight` until the caller releases it.
 *
 * Check 2 compares the body's own digest with the ledger when check 1 could not, because the
 * client sent no `Content-Digest`. When check 1 already compared this exact fingerprint,
 * repeating the lookup would buy nothing and cost a database round trip per write on
 * PostgreSQL: the notes routes do no slow work between the two checks, a copy running in this
 * process is caught by the in-flight registry, and one that completed meanwhile anywhere is
 * caught by check 3. A route with expensive work after validation (seed 001 decodes photos
 * there) should look up again.
 */
export async function checkAfterValidation(
  ctx: CheckContext,
  request: WriteRequest,
  lookup: LedgerLookup,
): Promise<AfterValidation> {
  const { principal, idempotencyKey: key } = request;
  const digest = request.bodyDigest ?? EMPTY_BODY_DIGEST;
  const declared = parseContentDigest(request.headers[HEADER.contentDigest]);
  if (declared.kind === 'sha-256' && declared.digest !== digest) {
    const answer = problemAnswer(400, PROBLEM.digestMismatch, {
      detail: 'Content-Digest differs from the body',
    });
    return { kind: 'answer', answer };
  }
  const fingerprint = fingerprintOf(request, digest);

  if (request.comparedFingerprint !== fingerprint) {
    const stored = await lookup(principal, key);
    if (stored)
      return { kind: 'answer', answer: answerCompleted(ctx, request, stored, fingerprint) };
  }
  // Checked after every await: a copy may have started meanwhile.
  if (!ctx.inflight.acquire(principal, key, fingerprint)) {
    const holder = ctx.inflight.get(principal, key)!;
    return { kind: 'answer', answer: answerInflight(ctx, request, holder, fingerprint) };
  }
  return { kind: 'held', fingerprint };
}
