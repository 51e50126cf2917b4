import { ID_PATTERN } from '../model/page-api.ts';

/**
 * The HTTP wire protocol between the outbox engine and a server (SPEC §15), shared by the service
 * worker's transport and the reference server: problem types, the receipt lookup, and parsers of
 * the protocol's headers. The formats the planners write (key, entity tag, digest) live in
 * `model/headers.ts` and `plan/identity.ts` and are re-exported here, so a server needs this
 * module only.
 *
 * Batches (SPEC §15.1, codec in `batch.ts`, re-exported here): a server that takes many rows per
 * request advertises its endpoint with a `Link` header on its API answers,
 * `Link: </sync/batch>; rel="urn:sw-outbox:batch"; max-items=100; max-bytes=1048576`
 * ({@link BATCH_LINK_REL}; the target is relative to the answer's URL, the limits are what it
 * accepts), and answers `OPTIONS <endpoint>` with 204 and the same `Link`. A client learns the
 * endpoint from any answer it already gets, or asks with `OPTIONS`; a server without batches
 * sends no such `Link` and answers a batch with 404 or 405, which a client takes as "no batches
 * here": it sends one request per row and remembers that for the origin.
 */

export { contentDigest, formatSha256Digest } from '../model/digest.ts';
export {
  formatIdempotencyKey,
  formatRetention,
  formatRevisionTag,
  HEADER,
  parseRetention,
} from '../model/headers.ts';
export { fetchMethod, isSendableHeader } from '../model/http-header.ts';
export { ID_PATTERN } from '../model/page-api.ts';
export { PROBLEM, PROBLEM_CONTENT_TYPE, type ProblemType } from '../model/problem-types.ts';
export {
  BATCH_LINK_REL,
  BATCH_MIN_LIMITS,
  BATCH_PATH,
  type BatchAnswer,
  type BatchAnswerBody,
  type BatchEndpoint,
  type BatchItem,
  type BatchItemAnswer,
  type BatchLimits,
  type BatchRequestBody,
  batchPath,
  decodeBatchAnswer,
  encodeBatch,
  formatBatchLink,
  parseBatchLink,
  readBatchRequest,
  toBatchItem,
} from './batch.ts';

/** An `application/problem+json` body (RFC 9457) with the extension members this protocol uses. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  /** `revision-conflict`: the revision the server holds now. */
  currentRevision?: number;
  /** `revision-conflict`: the server's copy, when the server sends one (SPEC §10 evidence). */
  current?: unknown;
  /**
   * `revision-conflict`, from a server that keeps history (SPEC §10.1): the version a resend at
   * `currentRevision` would overwrite, and where that version can be read once it has been (and
   * before: the current version is served there too). Absent when the server keeps no history;
   * a client then records no history reference.
   */
  history?: ConflictHistory;
  /** `validation-failed`: what was wrong, one entry per issue. */
  issues?: ReadonlyArray<{ path: string; message: string }>;
  [extension: string]: unknown;
}

/** The `history` member of a `revision-conflict` problem (SPEC §10.1). */
export interface ConflictHistory {
  /** The revision the conflicting write was refused at; a resend would supersede it. */
  revision: number;
  /** `GET` it (with the owner's credentials) for a {@link RecordVersionResponse}. */
  href: string;
}

/**
 * `GET <collection>/<id>/history/<revision>` (SPEC §10.1): one version of a record, to its owner
 * only (404 for anyone else, for a revision never held, and once its history expired with the
 * ledger's retention).
 */
export interface RecordVersionResponse {
  id: string;
  revision: number;
  /** The record's fields as that version held them: what an update writes to restore it. */
  value: unknown;
  /**
   * The idempotency key of the write that superseded it; null for an edit outside the ledger,
   * and for the current version.
   */
  supersededBy: string | null;
  /** When it was superseded (ms since the epoch); null for the current version. */
  supersededAt: number | null;
}

/** `GET /idempotency/<key>`: the stored response of a completed key. */
export interface ReceiptLookupResponse {
  status: number;
  body: unknown;
}

/**
 * The largest revision the protocol carries: a 32-bit signed integer, which every reference-server
 * adapter stores. An `If-Match` beyond it names no revision at all and is answered as malformed.
 */
export const MAX_REVISION = 2_147_483_647;

/** How an `Idempotency-Key` header parsed. */
export type IdempotencyKeyParse =
  | { kind: 'ok'; key: string }
  | { kind: 'missing' }
  | { kind: 'malformed' };

/**
 * Parses `Idempotency-Key`: an RFC 8941 sf-string (`"abc…"`, escapes allowed) or the bare id.
 * Either way the id must match {@link ID_PATTERN}; parameters and lists are malformed.
 */
export function parseIdempotencyKey(value: string | null | undefined): IdempotencyKeyParse {
  if (value === null || value === undefined) return { kind: 'missing' };
  const text = value.trim();
  if (text === '') return { kind: 'missing' };
  const key = text.startsWith('"') ? parseSfString(text) : text;
  return key !== undefined && ID_PATTERN.test(key) ? { kind: 'ok', key } : { kind: 'malformed' };
}

/** RFC 8941 §4.2.5: a whole field value that is exactly one sf-string, or `undefined`. */
function parseSfString(text: string): string | undefined {
  let out = '';
  for (let i = 1; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\') {
      const next = text[++i];
      if (next !== '"' && next !== '\\') return undefined;
      out += next;
    } else if (ch === '"') {
      return i === text.length - 1 ? out : undefined;
    } else {
      const code = ch.charCodeAt(0);
      if (code < 0x20 || code > 0x7e) return undefined;
      out += ch;
    }
  }
  return undefined;
}

/**
 * Parses an `ETag`/`If-Match` value made by {@link formatRevisionTag} (the bare number is
 * accepted). Returns `undefined` for anything else, including `*`, lists and weak tags.
 */
export function parseRevisionTag(value: string): number | undefined {
  const match = /^(?:"(\d{1,15})"|(\d{1,15}))$/.exec(value.trim());
  return match ? Number(match[1] ?? match[2]) : undefined;
}
