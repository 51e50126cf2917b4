import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatRevisionTag, HEADER, MAX_REVISION, PROBLEM, parseRevisionTag } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { EMPTY_BODY_DIGEST, parseContentDigest } from './fingerprint.ts';
import { answerCompleted, answerInflight, fingerprintOf, sendStored } from './idempotency.ts';
import { type ProblemExtras, sendProblem } from './problem.ts';
import type { NoteRecord, WriteIdentity, WriteIntent, WriteOutcome } from './store/port.ts';

/**
 * `If-Match` of an update or delete: the revision, or an answer already sent (428 when absent,
 * 400 when not `"<revision>"` with a revision from 0 to {@link MAX_REVISION}). A larger number
 * names no revision any adapter can hold (PostgreSQL's `integer`), so it is malformed, not a
 * conflict: every adapter gives the same permanent answer instead of one failing at the driver.
 */
export function requireRevision(
  request: FastifyRequest,
  reply: FastifyReply,
): number | FastifyReply {
  const header = request.headers[HEADER.ifMatch];
  if (header === undefined) return sendProblem(reply, 428, PROBLEM.preconditionRequired);
  const revision = parseRevisionTag(header);
  if (revision === undefined || revision > MAX_REVISION) {
    return sendProblem(reply, 400, PROBLEM.ifMatchMalformed, {
      detail: `expected "<revision>", a revision from 0 to ${MAX_REVISION}`,
    });
  }
  return revision;
}

/**
 * Runs a validated write through check 2 and check 3 of SPEC §15 and answers it.
 *
 * Check 2 (after validation, before the work) compares the body's own digest with the ledger
 * when check 1 could not, because the client sent no `Content-Digest`. When check 1 already
 * compared this exact fingerprint, repeating the lookup would buy nothing and cost a database
 * round trip per write on PostgreSQL: the notes routes do no slow work between the two checks, a
 * copy running in this process is caught by the in-flight registry, and one that completed
 * meanwhile anywhere is caught by check 3. A route with expensive work after validation (seed
 * 001 decodes photos there) should look up again.
 *
 * Check 3 is the store's `write`: key claim, revision compare-and-set and response store in one
 * transaction, so a failed attempt leaves no ledger entry and racing copies cannot both write.
 */
export async function runWrite(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  intent: WriteIntent,
): Promise<FastifyReply> {
  const { principal, idempotencyKey: key } = request;
  const digest = request.bodyDigest ?? EMPTY_BODY_DIGEST;
  const declared = parseContentDigest(request.headers[HEADER.contentDigest]);
  if (declared.kind === 'sha-256' && declared.digest !== digest) {
    return sendProblem(reply, 400, PROBLEM.digestMismatch, {
      detail: 'Content-Digest differs from the body',
    });
  }
  const fingerprint = fingerprintOf(request, digest);

  if (request.comparedFingerprint !== fingerprint) {
    const stored = await ctx.store.lookup(principal, key);
    if (stored) return answerCompleted(ctx, request, reply, stored, fingerprint);
  }
  // Checked after every await: a copy may have started meanwhile.
  if (!ctx.inflight.acquire(principal, key, fingerprint)) {
    return answerInflight(ctx, request, reply, ctx.inflight.get(principal, key)!, fingerprint);
  }

  const target = ctx.faults.active
    ? { method: request.method, route: request.routeOptions.url ?? request.url, user: principal }
    : undefined;
  const delay = target && ctx.faults.take('delay', target);
  let outcome: WriteOutcome;
  try {
    if (delay && delay.phase === 'before-commit') await ctx.faults.hold(delay.ms, principal);
    const identity: WriteIdentity = { principal, key, fingerprint, now: ctx.now() };
    outcome = await ctx.store.write({ ...identity, ...intent });
  } finally {
    ctx.inflight.release(principal, key);
  }

  switch (outcome.kind) {
    case 'applied': {
      ctx.stats.effect(principal, key);
      if (target && ctx.faults.take('drop-after-commit', target)) {
        // The effect is committed; the client never hears of it and must retry (G2).
        reply.hijack();
        request.raw.socket.destroy();
        return reply;
      }
      if (delay && delay.phase === 'after-commit') await ctx.faults.hold(delay.ms, principal);
      return sendStored(reply, outcome.response);
    }
    case 'completed':
      return answerCompleted(ctx, request, reply, outcome.response, fingerprint);
    case 'conflict': {
      ctx.stats.count(principal, 'conflicts');
      const { current } = outcome;
      reply.header(HEADER.etag, formatRevisionTag(current.revision));
      return sendProblem(reply, 412, PROBLEM.revisionConflict, conflictExtras(ctx, current));
    }
    case 'not-found':
      return sendProblem(reply, 404, PROBLEM.notFound);
  }
}

/** Where the reference server serves a version of a note (SPEC §10.1). */
export function noteHistoryPath(id: string, revision: number): string {
  return `/api/notes/${encodeURIComponent(id)}/history/${revision}`;
}

/**
 * The members of a `revision-conflict` answer (SPEC §10, §10.1): the current revision, the
 * server copy when configured, and `history`, the version the resend would overwrite — this
 * server keeps it once superseded, so a client can read it later and restore it.
 */
export function conflictExtras(
  ctx: Pick<AppContext, 'conflictIncludesCurrent'>,
  current: NoteRecord,
): ProblemExtras {
  return {
    detail: `the note is at revision ${current.revision}`,
    currentRevision: current.revision,
    ...(ctx.conflictIncludesCurrent ? { current } : {}),
    history: { revision: current.revision, href: noteHistoryPath(current.id, current.revision) },
  };
}

function _sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
