import type { BatchItem } from 'sw-outbox/wire';
import { isSendableHeader, PROBLEM } from 'sw-outbox/wire';
import { sha256Digest } from './fingerprint.ts';
import { type Answer, problemAnswer } from './problem.ts';

/**
 * A request's body and headers judged as the reference server's HTTP parser and JSON parser
 * judge a request alone's: what a batch item (SPEC §15.1) carries as JSON strings, and what the
 * kit (server/kit/) reads of a Fetch API request, so both refuse the same inputs alike.
 */

/** The answer a request alone gets from the parser for such bytes (server/http-server.ts). */
export const NOT_HTTP = { detail: 'the request is not valid HTTP/1.1' };

/**
 * Whether every header of an item could be sent alone. An item holds JSON strings, which can
 * carry what no request could (`fetch` refuses it, Node's parser answers 400) nor every adapter
 * store (PostgreSQL `text` holds no NUL, and `If-Match` is part of the fingerprint).
 */
export function carriesAsHttp(item: BatchItem): boolean {
  return Object.entries(item.headers).every(([name, value]) => isSendableHeader(name, value));
}

/** Media types an item's body may have: JSON, as for a request alone. */
const JSON_MEDIA_TYPE = /^\s*application\/json\s*(?:;|$)/i;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** An item's body read: its parsed value and digest, or the answer refusing it. */
export type ItemBody =
  | { ok: true; value: unknown; digest: string | null }
  | { ok: false; answer: Answer };

/**
 * An item's body as a request alone's is read (`kit/request-body.ts`), in the same order: a body
 * over the limit is 413, one with no UTF-8 form (a lone surrogate) 400, a `Content-Type` other
 * than `application/json` 415 (none at all is 415 too, unless there is no body), one that is not
 * JSON 400. The digest is over the body's UTF-8 bytes; an empty body parses to nothing.
 */
export function readItemBody(item: BatchItem, limit: number): ItemBody {
  const contentType = item.headers['content-type'];
  const body = item.body ?? '';
  const bytes = Buffer.from(body, 'utf8');
  if (bytes.length > limit) return { ok: false, answer: problemAnswer(413, PROBLEM.bodyTooLarge) };
  if (LONE_SURROGATE.test(body)) {
    const answer = problemAnswer(400, PROBLEM.malformedBody, { detail: 'the body is not UTF-8' });
    return { ok: false, answer };
  }
  if (contentType === undefined ? body !== '' : !JSON_MEDIA_TYPE.test(contentType)) {
    return { ok: false, answer: problemAnswer(415, PROBLEM.unsupportedMediaType) };
  }
  if (item.body === null) return { ok: true, value: undefined, digest: null };
  const digest = sha256Digest(bytes);
  if (bytes.length === 0) return { ok: true, value: undefined, digest };
  try {
    return { ok: true, value: JSON.parse(body), digest };
  } catch {
    return { ok: false, answer: problemAnswer(400, PROBLEM.malformedBody) };
  }
}
