import { HEADER, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';
import { parseContentDigest, requestFingerprint } from './fingerprint.ts';
import type { InflightKeys } from './inflight.ts';
import { type Answer, JSON_CONTENT_TYPE_HEADER, problemAnswer } from './problem.ts';
import type { ServerStats } from './stats.ts';
import type { StoredResponse } from './kit/ledger.ts';

/**
 * The first two of the three "have I seen this key?" checks of SPEC §15 (seed 001). The third
 * runs inside the write transaction (the kit's ledger, server/kit/ledger.ts). Checks 1 and 2 only save work: a
 * retry is answered before its body is read or validated. Correctness rests on check 3.
 *
 * The checks work on a {@link WriteRequest} and return answers as values, so that a request
 * alone and an item of a batch (SPEC §15.1) pass exactly the same checks.
 */

/**
 * What the checks read and note of one write: the kit makes one per request alone and per batch
 * item. Header names are lower case.
 */
export interface WriteRequest {
  readonly principal: string;
  readonly method: string;
  /** The request target: path and query. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed `Idempotency-Key`; set by check 1. */
  idempotencyKey: string;
  /** `Content-Digest` of the body as received; `null` when there was no body. */
  bodyDigest: string | null;
  /** The fingerprint check 1 compared with the ledger, if it could (a declared digest). */
  comparedFingerprint: string | null;
}

/**
 * What the checks need of a server: the keys in progress in this process, and counters. The
 * kit (server/kit/) makes one.
 */
export interface CheckContext {
  readonly inflight: InflightKeys;
  readonly stats: Pick<ServerStats, 'count'>;
}

/** Reads the ledger for a key: the store itself, or what a batch read for all its keys. */
export type LedgerLookup = (principal: string, key: string) => Promise<StoredResponse | undefined>;

/**
 * Check 1 (after auth, before the body is read): the key must be present and well formed (400),
 * a key in progress here gets 409, and a completed key whose stored fingerprint matches the
 * declared `Content-Digest` is replayed (a mismatch is 422). Without `Content-Digest` the
 * comparison waits for check 2, after the body is read. `undefined`: go on.
 */
export async function checkBeforeBody(
  ctx: CheckContext,
  request: WriteRequest,
  lookup: LedgerLookup,
): Promise<Answer | undefined> {
  const parsed = parseIdempotencyKey(request.headers[HEADER.idempotencyKey] as string | undefined);
  if (parsed.kind === 'missing') return problemAnswer(400, PROBLEM.keyMissing);
  if (parsed.kind === 'malformed') {
    return problemAnswer(400, PROBLEM.keyMalformed, {
      detail:
        'send an RFC 8941 string such as "notes-0123456789abcdef01234567" (^[A-Za-z0-9_-]{8,80}$)',
    });
  }
  request.idempotencyKey = parsed.key;
  const declared = parseContentDigest(request.headers[HEADER.contentDigest]);
  if (declared.kind === 'malformed') {
    return problemAnswer(400, PROBLEM.digestMismatch, { detail: 'Content-Digest is malformed' });
  }
  const fingerprint =
    declared.kind === 'sha-256' ? fingerprintOf(request, declared.digest) : undefined;
  const holder = ctx.inflight.get(request.principal, parsed.key);
  if (holder !== undefined) return answerInflight(ctx, request, holder, fingerprint);
  if (fingerprint === undefined) return undefined;
  const stored = await lookup(request.principal, parsed.key);
  if (stored) return answerCompleted(ctx, request, stored, fingerprint);
  request.comparedFingerprint = fingerprint;
  return undefined;
}

/** The fingerprint of this request for a body digest. */
export function fingerprintOf(request: WriteRequest, digest: string): string {
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
  ctx: CheckContext,
  request: WriteRequest,
  holderFingerprint: string,
  fingerprint: string | undefined,
): Answer {
  if (fingerprint !== undefined && fingerprint !== holderFingerprint) {
    ctx.stats.count(request.principal, 'keyReused');
    return problemAnswer(422, PROBLEM.keyReused, {
      detail: 'the key is in use by another request',
    });
  }
  ctx.stats.count(request.principal, 'inProgress');
  return problemAnswer(409, PROBLEM.inProgress, {}, { [HEADER.retryAfter]: '1' });
}

/**
 * Answers a completed key: the stored status and body, byte for byte, with
 * `Idempotent-Replayed: true` when the fingerprint matches; otherwise 422.
 */
export function answerCompleted(
  ctx: CheckContext,
  request: WriteRequest,
  stored: StoredResponse,
  fingerprint: string,
): Answer {
  if (stored.fingerprint !== fingerprint) {
    ctx.stats.count(request.principal, 'keyReused');
    return problemAnswer(422, PROBLEM.keyReused, {
      detail: 'this key was first used with another method, path, If-Match or body',
    });
  }
  ctx.stats.count(request.principal, 'replays');
  const answer = storedAnswer(stored);
  answer.headers[HEADER.replayed] = 'true';
  return answer;
}

/** A stored (or just stored) response exactly as the ledger holds it. */
export function storedAnswer(stored: StoredResponse): Answer {
  const headers: Record<string, string> = { 'content-type': JSON_CONTENT_TYPE_HEADER };
  if (stored.etag !== null) headers[HEADER.etag] = stored.etag;
  return { status: stored.status, headers, body: stored.body };
}
