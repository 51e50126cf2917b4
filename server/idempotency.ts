import type { FastifyReply, FastifyRequest } from 'fastify';
import { HEADER, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { parseContentDigest, requestFingerprint } from './fingerprint.ts';
import { sendProblem } from './problem.ts';
import type { StoredResponse } from './store/port.ts';

/**
 * The first two of the three "have I seen this key?" checks of SPEC §15 (seed 001). The third
 * runs inside the write transaction (the store's `write`). Checks 1 and 2 only save work: a
 * retry is answered before its body is read or validated. Correctness rests on check 3.
 */

/**
 * Check 1, an `onRequest` hook on write routes (after auth, before the body is read): the key
 * must be present and well formed (400), a key in progress here gets 409, and a completed key
 * whose stored fingerprint matches the declared `Content-Digest` is replayed (a mismatch is 422).
 * Without `Content-Digest` the comparison waits for check 2, after the body is read.
 */
export function checkBeforeBody(ctx: AppContext) {
  return async function checkBeforeBodyHook(request: FastifyRequest, reply: FastifyReply) {
    const parsed = parseIdempotencyKey(
      request.headers[HEADER.idempotencyKey] as string | undefined,
    );
    if (parsed.kind === 'missing') return sendProblem(reply, 400, PROBLEM.keyMissing);
    if (parsed.kind === 'malformed') {
      return sendProblem(reply, 400, PROBLEM.keyMalformed, {
        detail:
          'send an RFC 8941 string such as "notes-0123456789abcdef01234567" (^[A-Za-z0-9_-]{8,80}$)',
      });
    }
    request.idempotencyKey = parsed.key;
    const declared = parseContentDigest(request.headers[HEADER.contentDigest]);
    if (declared.kind === 'malformed') {
      return sendProblem(reply, 400, PROBLEM.digestMismatch, {
        detail: 'Content-Digest is malformed',
      });
    }
    const fingerprint =
      declared.kind === 'sha-256' ? fingerprintOf(request, declared.digest) : undefined;
    const holder = ctx.inflight.get(request.principal, parsed.key);
    if (holder !== undefined) return answerInflight(ctx, request, reply, holder, fingerprint);
    if (fingerprint === undefined) return;
    const stored = await ctx.store.lookup(request.principal, parsed.key);
    if (stored) return answerCompleted(ctx, request, reply, stored, fingerprint);
    request.comparedFingerprint = fingerprint;
  };
}

/** The fingerprint of this request for a body digest. */
export function fingerprintOf(request: FastifyRequest, digest: string): string {
  return requestFingerprint(
    request.method,
    request.url,
    request.headers[HEADER.ifMatch] as string | undefined,
    digest,
  );
}

/**
 * Answers a key another request of this process holds: 409 with `Retry-After: 1`, or 422 when
 * the fingerprints are known to differ.
 */
export function answerInflight(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  holderFingerprint: string,
  fingerprint: string | undefined,
): FastifyReply {
  if (fingerprint !== undefined && fingerprint !== holderFingerprint) {
    ctx.stats.count(request.principal, 'keyReused');
    return sendProblem(reply, 422, PROBLEM.keyReused, {
      detail: 'the key is in use by another request',
    });
  }
  ctx.stats.count(request.principal, 'inProgress');
  reply.header(HEADER.retryAfter, '1');
  return sendProblem(reply, 409, PROBLEM.inProgress);
}

/**
 * Answers a completed key: the stored status and body, byte for byte, with
 * `Idempotent-Replayed: true` when the fingerprint matches; otherwise 422.
 */
export function answerCompleted(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  stored: StoredResponse,
  fingerprint: string,
): FastifyReply {
  if (stored.fingerprint !== fingerprint) {
    ctx.stats.count(request.principal, 'keyReused');
    return sendProblem(reply, 422, PROBLEM.keyReused, {
      detail: 'this key was first used with another method, path, If-Match or body',
    });
  }
  ctx.stats.count(request.principal, 'replays');
  reply.header(HEADER.replayed, 'true');
  return sendStored(reply, stored);
}

/** Sends a stored (or just stored) response exactly as the ledger holds it. */
export function sendStored(reply: FastifyReply, stored: StoredResponse): FastifyReply {
  if (stored.etag !== null) reply.header(HEADER.etag, stored.etag);
  return reply
    .code(stored.status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(stored.body);
}
