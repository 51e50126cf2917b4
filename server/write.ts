import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatRevisionTag, HEADER, MAX_REVISION, PROBLEM, parseRevisionTag } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import type { FaultTarget } from './faults.ts';
import { EMPTY_BODY_DIGEST, parseContentDigest } from './fingerprint.ts';
import {
  answerCompleted,
  answerInflight,
  type CheckContext,
  fingerprintOf,
  type LedgerLookup,
  storedAnswer,
  type WriteRequest,
} from './idempotency.ts';
import { type Answer, type ProblemExtras, problemAnswer, sendAnswer } from './problem.ts';
import type { NoteRecord, WriteCommand, WriteIntent, WriteOutcome } from './store/port.ts';

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

/** A validated write after check 2: refused with an answer, or ready for the store. */
export type PreparedWrite =
  | { kind: 'answer'; answer: Answer }
  | { kind: 'write'; command: WriteCommand };

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

/**
 * {@link checkAfterValidation} for a notes write: on `write` the key is held in `ctx.inflight`
 * until the caller releases it.
 */
export async function prepareWrite(
  ctx: AppContext,
  request: WriteRequest,
  intent: WriteIntent,
  lookup: LedgerLookup,
): Promise<PreparedWrite> {
  const checked = await checkAfterValidation(ctx, request, lookup);
  if (checked.kind === 'answer') return checked;
  const { principal, idempotencyKey: key } = request;
  const command = { principal, key, fingerprint: checked.fingerprint, now: ctx.now(), ...intent };
  return { kind: 'write', command };
}

/** The answer to a write the store finished (check 3's outcome, SPEC §15). */
export function answerWrite(
  ctx: AppContext,
  request: WriteRequest,
  command: WriteCommand,
  outcome: WriteOutcome,
): Answer {
  switch (outcome.kind) {
    case 'applied':
      ctx.stats.effect(command.principal, command.key);
      return storedAnswer(outcome.response);
    case 'completed':
      return answerCompleted(ctx, request, outcome.response, command.fingerprint);
    case 'conflict': {
      ctx.stats.count(command.principal, 'conflicts');
      const { current } = outcome;
      return problemAnswer(412, PROBLEM.revisionConflict, conflictExtras(ctx, current), {
        [HEADER.etag]: formatRevisionTag(current.revision),
      });
    }
    case 'not-found':
      return problemAnswer(404, PROBLEM.notFound);
  }
}

/**
 * Runs a validated write sent alone: check 2, check 3 (the store's `write`: key claim, revision
 * compare-and-set and response store in one transaction, so a failed attempt leaves no ledger
 * entry and racing copies cannot both write) and the faults of its route.
 */
export async function runWrite(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  intent: WriteIntent,
): Promise<FastifyReply> {
  const prepared = await prepareWrite(ctx, request, intent, (principal, key) =>
    ctx.store.lookup(principal, key),
  );
  if (prepared.kind === 'answer') return sendAnswer(reply, prepared.answer);
  const { command } = prepared;

  const target: FaultTarget | undefined = ctx.faults.active
    ? {
        method: request.method,
        route: request.routeOptions.url ?? request.url,
        user: command.principal,
      }
    : undefined;
  const delay = target && ctx.faults.take('delay', target);
  let outcome: WriteOutcome;
  try {
    if (delay && delay.phase === 'before-commit')
      await ctx.faults.hold(delay.ms, command.principal);
    outcome = await ctx.store.write(command);
  } finally {
    ctx.inflight.release(command.principal, command.key);
  }

  const answer = answerWrite(ctx, request, command, outcome);
  if (outcome.kind === 'applied') {
    if (target && ctx.faults.take('drop-after-commit', target)) return dropAnswer(request, reply);
    if (delay && delay.phase === 'after-commit') await ctx.faults.hold(delay.ms, command.principal);
  }
  return sendAnswer(reply, answer);
}

/** The effect is committed; the client never hears of it and must retry (G2). */
export function dropAnswer(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.hijack();
  request.raw.socket.destroy();
  return reply;
}

/** Where the reference server serves a version of a note (SPEC §10.1). */
function noteHistoryPath(id: string, revision: number): string {
  return `/api/notes/${encodeURIComponent(id)}/history/${revision}`;
}

/**
 * The members of a `revision-conflict` answer (SPEC §10, §10.1): the current revision, the
 * server copy when configured, and `history`, the version the resend would overwrite — this
 * server keeps it once superseded, so a client can read it later and restore it.
 */
function conflictExtras(
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
