import { formatIdempotencyKey, HEADER } from '../model/headers.ts';
import { fetchMethod } from '../model/http-header.ts';
import type { TransportResult } from '../model/ports.ts';
import type { RowRequest } from '../model/row.ts';

const encoder = new TextEncoder();

/**
 * Batches (SPEC §15.1): many stored row requests in one HTTP request, one answer per row. Pure
 * and small on purpose: the service worker bundles it, and the reference server uses the same
 * types and envelope reader.
 *
 * Request: `POST <batch endpoint>` with `Content-Type: application/json` and the batch's
 * credentials, body `{ "items": [ { "method", "path", "headers", "body" } ] }`. Each item is the
 * request its row would have sent alone: the same method, the path (and query) of its URL, the
 * stored headers (lower-case names) with `idempotency-key`, and `body` the exact body text or
 * `null`. Its key, bytes and fingerprint are those of the single request, so a row can move
 * between batched and single sends without a new key.
 *
 * Answer: `200 { "items": [ { "status", "headers", "body" } ] }`, one per item in item order:
 * the status, the headers (lower-case: `content-type`, `etag`, `idempotent-replayed`,
 * `retry-after`) and `body`, the exact body text the request alone would have received (a JSON
 * string, not a parsed value, so the bytes survive). Any other status is the batch's own answer
 * and applies to every item ({@link decodeBatchAnswer}).
 *
 * Discovery: a server that takes batches says so with a `Link` header
 * (`</sync/batch>; rel="urn:sw-outbox:batch"; max-items=100; max-bytes=1048576`,
 * {@link parseBatchLink}); a server without the endpoint answers a batch with 404 or 405.
 */

/** The reference server's batch path. */
export const BATCH_PATH = '/sync/batch';

/** The link relation that advertises a batch endpoint (an extension relation type, RFC 8288). */
export const BATCH_LINK_REL = 'urn:sw-outbox:batch';

/**
 * Limits every batch endpoint accepts at least (SPEC §15.1's client defaults); the default of
 * {@link encodeBatch}. A server may accept more and says so in its `Link` (the reference server:
 * 100 items, 1 MiB).
 */
export const BATCH_MIN_LIMITS = { maxItems: 50, maxBytes: 256 * 1024 } as const;

/** One request inside a batch. */
export interface BatchItem {
  method: string;
  /** Path and query, e.g. `/api/notes/note-1`; on the origin of the batch endpoint. */
  path: string;
  /** Lower-case names. Credentials are the batch's, never an item's. */
  headers: Record<string, string>;
  /** The exact body text, or `null` for none. */
  body: string | null;
}

/** The body of a batch request. */
export interface BatchRequestBody {
  items: BatchItem[];
}

/** One item's answer: what its request alone would have received. */
export interface BatchItemAnswer {
  status: number;
  /** Lower-case names; only the headers the item's own answer carries. */
  headers: Record<string, string>;
  /** The exact body text. */
  body: string;
}

/** The body of a batch answer (status 200). */
export interface BatchAnswerBody {
  items: BatchItemAnswer[];
}

/** Limits of a batch: how many items, how many bytes of body. */
export interface BatchLimits {
  maxItems: number;
  maxBytes: number;
}

/** A batch endpoint as a `Link` advertised it. */
export interface BatchEndpoint {
  /** Absolute URL of the endpoint. */
  url: string;
  /** Limits the server published, when it did. */
  maxItems?: number;
  maxBytes?: number;
}

/** A batch ready to send: the body and how many of the given requests it carries. */
export interface EncodedBatch {
  body: string;
  /** UTF-8 length of `body`. */
  bytes: number;
  /** The batch carries `requests[0 … count-1]`; the rest did not fit the limits. */
  count: number;
}

/**
 * How a batch was answered: per item, in item order, each shaped like a single request's
 * transport result; or one answer for the whole batch.
 *
 * - `items`: settle each row with its own result.
 * - `all`: the batch's own answer (401, 408, 429, 5xx): settle every row as if its own request
 *   had received `result` — nothing was stored for them (SPEC §15.1).
 * - `unsupported`: 404, 405 or 501, no batches at this endpoint: send one request per row and
 *   remember it for the origin. Nothing ran.
 * - `too_large`: 413, the batch exceeds the server's limits: send fewer rows. Nothing ran.
 * - `refused`: another answer to the envelope itself (400, 415, …): nothing ran; send these rows
 *   one by one.
 * - `malformed`: a 2xx that is not an answer for `count` items. The items may have run: resend
 *   the same rows with the same keys (the ledger answers what did run).
 */
export type BatchAnswer =
  | { kind: 'items'; results: Array<Extract<TransportResult, { kind: 'response' }>> }
  | { kind: 'all'; result: Extract<TransportResult, { kind: 'response' }> }
  | { kind: 'unsupported'; status: number }
  | { kind: 'too_large'; result: Extract<TransportResult, { kind: 'response' }> }
  | { kind: 'refused'; result: Extract<TransportResult, { kind: 'response' }> }
  | { kind: 'malformed'; message: string };

/**
 * The path (and query) a request URL addresses on the endpoint's origin, resolved against
 * `baseUrl` as the fetch transport resolves it (its `baseUrl`, the worker's or page's location;
 * default the endpoint); `undefined` when it is on another origin or is no URL (send it alone).
 */
export function batchPath(url: string, endpoint: string, baseUrl = endpoint): string | undefined {
  try {
    const origin = new URL(endpoint).origin;
    const target = new URL(url, baseUrl);
    return target.origin === origin ? target.pathname + target.search : undefined;
  } catch {
    return undefined;
  }
}

/** A lone UTF-16 surrogate: it has no UTF-8 form, and `fetch` sends U+FFFD for it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The item for one stored request, exactly as the fetch transport would send it alone: its
 * method as `fetch` normalizes it, its headers plus `idempotency-key` when absent, and the body
 * as the bytes `fetch` would send (a lone surrogate becomes U+FFFD, as in the stored
 * `content-digest`). Throws a `TypeError` when the URL is not on the endpoint's origin: pick rows
 * with {@link batchPath} first.
 */
export function toBatchItem(request: RowRequest, endpoint: string, baseUrl = endpoint): BatchItem {
  const path = batchPath(request.url, endpoint, baseUrl);
  if (path === undefined) {
    throw new TypeError(`${request.url} is not on the origin of the batch endpoint ${endpoint}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
  headers[HEADER.idempotencyKey] ??= formatIdempotencyKey(request.requestId);
  const body = request.body === null ? null : request.body.replace(LONE_SURROGATE, '\ufffd');
  return { method: fetchMethod(request.method), path, headers, body };
}

/** Where a batch goes, what relative request URLs resolve against, and its limits. */
export interface EncodeBatchOptions extends Partial<BatchLimits> {
  /** Absolute URL of the batch endpoint. */
  endpoint: string;
  /** Base of relative request URLs, as the transport's `baseUrl`; default `endpoint`. */
  baseUrl?: string;
}

/**
 * Encodes the longest prefix of `requests` that fits the limits (default
 * {@link BATCH_MIN_LIMITS}) as a batch body. `count` may be 0 when the first request alone is
 * larger than `maxBytes`: send that one alone.
 */
export function encodeBatch(
  requests: readonly RowRequest[],
  options: EncodeBatchOptions,
): EncodedBatch {
  const maxItems = options.maxItems ?? BATCH_MIN_LIMITS.maxItems;
  const maxBytes = options.maxBytes ?? BATCH_MIN_LIMITS.maxBytes;
  const texts: string[] = [];
  // `{"items":[` + `]}` and a comma between items.
  let bytes = 12;
  for (const request of requests) {
    if (texts.length >= maxItems) break;
    const text = JSON.stringify(toBatchItem(request, options.endpoint, options.baseUrl));
    const size = encoder.encode(text).length + (texts.length > 0 ? 1 : 0);
    if (bytes + size > maxBytes) break;
    texts.push(text);
    bytes += size;
  }
  return { body: `{"items":[${texts.join(',')}]}`, bytes, count: texts.length };
}

/**
 * Reads a batch answer for `count` items (`headers` with lower-case names, as the transport
 * gives them). Never throws: an answer that does not decode is `malformed`.
 */
export function decodeBatchAnswer(
  status: number,
  headers: Record<string, string>,
  body: string,
  count: number,
): BatchAnswer {
  const result = { kind: 'response' as const, status, headers, body };
  if (status === 404 || status === 405 || status === 501) return { kind: 'unsupported', status };
  if (status === 413) return { kind: 'too_large', result };
  if (status === 401 || status === 408 || status === 429 || status >= 500) {
    return { kind: 'all', result };
  }
  if (status < 200 || status >= 300) return { kind: 'refused', result };
  if (status !== 200) return { kind: 'malformed', message: `status ${status}, expected 200` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { kind: 'malformed', message: 'the body is not JSON' };
  }
  const items = isRecord(parsed) ? parsed.items : undefined;
  if (!Array.isArray(items)) return { kind: 'malformed', message: 'no items array' };
  if (items.length !== count) {
    return { kind: 'malformed', message: `${items.length} answers for ${count} items` };
  }
  const results: Array<Extract<TransportResult, { kind: 'response' }>> = [];
  for (const [index, item] of items.entries()) {
    const answer = readItemAnswer(item);
    if (answer === undefined) return { kind: 'malformed', message: `answer ${index} is malformed` };
    results.push({ kind: 'response', ...answer });
  }
  return { kind: 'items', results };
}

function readItemAnswer(value: unknown): BatchItemAnswer | undefined {
  if (!isRecord(value)) return undefined;
  const { status, headers, body } = value;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) {
    return undefined;
  }
  if (typeof body !== 'string' || !isRecord(headers)) return undefined;
  const lower: Record<string, string> = {};
  for (const [name, header] of Object.entries(headers)) {
    if (typeof header !== 'string') return undefined;
    lower[name.toLowerCase()] = header;
  }
  return { status, headers: lower, body };
}

/** How a batch request body read: its items, or why it is not one (a batch-level 400). */
export type BatchRequestRead = { ok: true; items: BatchItem[] } | { ok: false; detail: string };

/**
 * Reads a parsed batch request body. The envelope must be `{ items: [...] }` and each item an
 * object with `method` and `path` strings, a `headers` object of strings and `body` a string or
 * `null`; header names are lower-cased (two names differing only in case are malformed). Other
 * members are ignored, so newer clients may add some. Everything else an item carries is judged
 * as its request alone would be, item by item.
 */
export function readBatchRequest(value: unknown): BatchRequestRead {
  if (!isRecord(value) || !Array.isArray(value.items)) {
    return { ok: false, detail: 'the body must be { "items": [ … ] }' };
  }
  const items: BatchItem[] = [];
  for (const [index, item] of value.items.entries()) {
    const read = readItem(item);
    if (typeof read === 'string') return { ok: false, detail: `items[${index}]: ${read}` };
    items.push(read);
  }
  return { ok: true, items };
}

function readItem(value: unknown): BatchItem | string {
  if (!isRecord(value)) return 'an item is an object';
  const { method, path, headers, body } = value;
  if (typeof method !== 'string') return 'method must be a string';
  if (typeof path !== 'string') return 'path must be a string';
  if (!isRecord(headers)) return 'headers must be an object';
  if (body !== null && typeof body !== 'string') return 'body must be a string or null';
  const lower: Record<string, string> = {};
  for (const [name, header] of Object.entries(headers)) {
    if (typeof header !== 'string') return `header ${JSON.stringify(name)} must be a string`;
    const key = name.toLowerCase();
    if (Object.hasOwn(lower, key)) return `header ${JSON.stringify(key)} appears twice`;
    lower[key] = header;
  }
  return { method, path, headers: lower, body };
}

/** The `Link` header value a server sends to advertise its batch endpoint. */
export function formatBatchLink(path: string, limits: BatchLimits): string {
  return `<${path}>; rel="${BATCH_LINK_REL}"; max-items=${limits.maxItems}; max-bytes=${limits.maxBytes}`;
}

const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^;,"]+(?:"(?:[^"\\]|\\.)*")?)*)/g;
const LINK_PARAM = /;\s*([^=;\s]+)\s*(?:=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*)))?/g;

/**
 * The batch endpoint a `Link` header advertises (RFC 8288, relation {@link BATCH_LINK_REL}),
 * resolved against `base` (the URL of the response that carried it); `undefined` when none.
 */
export function parseBatchLink(value: string | undefined, base: string): BatchEndpoint | undefined {
  if (value === undefined) return undefined;
  for (const [, target, params] of value.matchAll(LINK_VALUE)) {
    const found: Record<string, string> = {};
    for (const [, name, quoted, token] of (params ?? '').matchAll(LINK_PARAM)) {
      found[name!.toLowerCase()] = quoted?.replace(/\\(.)/g, '$1') ?? token ?? '';
    }
    if (!(found.rel ?? '').split(/\s+/).includes(BATCH_LINK_REL)) continue;
    let url: string;
    try {
      url = new URL(target!, base).href;
    } catch {
      continue;
    }
    const endpoint: BatchEndpoint = { url };
    const maxItems = positiveInteger(found['max-items']);
    const maxBytes = positiveInteger(found['max-bytes']);
    if (maxItems !== undefined) endpoint.maxItems = maxItems;
    if (maxBytes !== undefined) endpoint.maxBytes = maxBytes;
    return endpoint;
  }
  return undefined;
}

function positiveInteger(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,12}$/.test(text)) return undefined;
  const value = Number(text);
  return value > 0 ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
