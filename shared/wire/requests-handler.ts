import type { CollectionHandler, IntentInfo, PreparedRequest } from '../model/handler.ts';
import type { Json } from '../model/json.ts';
import { isPlainObject } from '../model/json-bounds.ts';
import { sha256Hex } from '../model/sha256.ts';

/**
 * Raw HTTP requests as outbox rows (SPEC §22): what a Workbox route failed to send, or what a
 * `workbox-background-sync` queue held, kept as the request itself — method, URL, body and the
 * headers that are not credentials — and replayed byte for byte. Rows of one URL are one record,
 * so they go in the order they were made (G4), one at a time; different URLs go side by side.
 */

/** The collection the Workbox drop-in writes to. */
export const REQUESTS_COLLECTION = 'requests';

/** The kind of a raw-request row. No merge rule knows it, so rows of one URL never coalesce (§6). */
export const REQUEST_KIND = 'request';

/** Headers never stored: credentials are added at send time by `auth` / `setAuth` (§2, §13). */
export const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
];

/** Headers the engine writes itself, and those a browser sets: a captured value is dropped. */
const ENGINE_HEADERS = ['idempotency-key', 'content-digest', 'content-length', 'host'];

/** A request as a `requests` row keeps it: its payload. */
export interface CapturedRequest {
  method: string;
  /** Absolute URL. */
  url: string;
  /** Lower-case names; no credentials. */
  headers: Record<string, string>;
  /** The body as text; null for none. */
  body: string | null;
  /** The header that carries the key when not `Idempotency-Key`; null: none is sent. */
  keyHeader?: string | null;
}

/** What {@link captureRequest} keeps and drops. */
export interface CaptureOptions {
  /** More header names to keep out of storage (e.g. an API key header). */
  dropHeaders?: readonly string[];
  /** The key's header, when not `Idempotency-Key`; null for servers that cannot honour one. */
  idempotencyHeader?: string | null;
}

/**
 * A request's parts as a row keeps them: header names lower-cased, credentials, the engine's own
 * identity headers and the key header dropped (§2). Pure; the caller has read the body as text.
 */
export function captureRequest(
  request: {
    method: string;
    url: string;
    headers: Iterable<[string, string]> | Record<string, string>;
    body: string | null;
  },
  options: CaptureOptions = {},
): CapturedRequest {
  const dropped = new Set([
    ...CREDENTIAL_HEADERS,
    ...ENGINE_HEADERS,
    ...(options.dropHeaders ?? []).map((name) => name.toLowerCase()),
  ]);
  const key = options.idempotencyHeader;
  if (typeof key === 'string') dropped.add(key.toLowerCase());
  const entries =
    Symbol.iterator in request.headers ? [...request.headers] : Object.entries(request.headers);
  const headers: Record<string, string> = {};
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!dropped.has(lower)) headers[lower] = value;
  }
  return {
    method: request.method.toUpperCase(),
    url: request.url,
    headers,
    body: request.body === '' ? null : request.body,
    ...(key === undefined ? {} : { keyHeader: typeof key === 'string' ? key.toLowerCase() : null }),
  };
}

/** The longest URL used as a record id as it is (the enqueue schema's `targetId` limit). */
const MAX_TARGET_LENGTH = 200;

/** The record a request belongs to: its URL, or for a longer one `url:<sha-256 of it>`. */
export function requestTarget(url: string): string {
  return url.length <= MAX_TARGET_LENGTH ? url : `url:${sha256Hex(url).slice(0, 40)}`;
}

/** A stored payload read back as a {@link CapturedRequest}, or undefined when it is not one. */
export function readCapturedRequest(payload: Json | undefined): CapturedRequest | undefined {
  if (!isPlainObject(payload)) return undefined;
  const { method, url, headers, body, keyHeader } = payload;
  if (typeof method !== 'string' || typeof url !== 'string') return undefined;
  if (body !== null && typeof body !== 'string') return undefined;
  if (!isPlainObject(headers) || !Object.values(headers).every((v) => typeof v === 'string'))
    return undefined;
  if (keyHeader !== undefined && keyHeader !== null && typeof keyHeader !== 'string')
    return undefined;
  return {
    method,
    url,
    headers: headers as Record<string, string>,
    body,
    ...(keyHeader === undefined ? {} : { keyHeader }),
  };
}

/**
 * The handler of the `requests` collection: `toRequest` replays the stored method, URL, headers
 * and body. What counts as success, transient, auth or permanent is the engine's classifier
 * (§11): 2xx settles the row, network errors, 408/425/429/5xx retry with backoff, 401 holds it,
 * other 4xx block it with the body kept. A raw request has no revision to rebase on, so a 412
 * blocks it as `revision_conflict` for the app to retry or discard.
 */
export function requestsHandler(): CollectionHandler {
  return {
    conflict: 'block',
    toRequest(intent: IntentInfo): PreparedRequest {
      const captured = readCapturedRequest(intent.payload);
      if (captured === undefined)
        throw new Error('a requests row needs { method, url, headers, body } as its payload');
      return {
        method: captured.method,
        url: captured.url,
        headers: captured.headers,
        body: captured.body,
        ...(captured.keyHeader === undefined ? {} : { idempotencyHeader: captured.keyHeader }),
      };
    },
  };
}
