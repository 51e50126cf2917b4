import type { RecordVersion } from '../model/history.ts';
import type { Json } from '../model/json.ts';
import type {
  Clock,
  HistoryLookup,
  ReceiptLookup,
  SendDeadline,
  Transport,
  TransportResult,
} from '../model/ports.ts';
import type { RowRequest } from '../model/row.ts';
import { BATCH_MIN_LIMITS } from '../wire/batch.ts';
import { formatIdempotencyKey, HEADER, parseRetention } from '../wire/protocol.ts';
import { createBatchBook } from './batch-book.ts';
import { fetchBatches } from './fetch-batches.ts';

/**
 * The `fetch` transport (SPEC §14), shared by the service worker and the page sender. It sends
 * the stored request bytes as they are, adds credentials at send time (they are never stored,
 * §2), refuses URLs outside `allowedOrigins`, and bounds every attempt with a timeout. A send
 * made under a claim's deadline (SPEC §4) is bounded by it as a whole: the `auth` hook and the
 * request's assembly count against it, nothing leaves once `leaveBy` has passed by the holder's
 * clock, and a request still running at `abortAt` is aborted.
 *
 * Batches (SPEC §15.1): the transport keeps a book of batch endpoints per origin
 * (`batch-book.ts`) — learned from the `Link` its answers carry, same origin only, or configured
 * by a handler — and sends many rows as one request through one (`batch-send.ts`), under the
 * earliest deadline of their claims.
 */

/** Credentials for an owner: headers to add, `{}` for cookie sessions, null when none exist. */
export type AuthSource = (owner: string) => Promise<Record<string, string> | null>;

/** Options of {@link createFetchTransport}. */
export interface FetchTransportOptions {
  /** Credentials at send time; a null answer means the row waits as `held` (§13). */
  auth: AuthSource;
  /** Origins requests may go to (§14). */
  allowedOrigins: readonly string[];
  /** Base for relative request URLs: the worker's or the page's location. */
  baseUrl: string;
  /** One attempt's limit; keep it below the lease so a late answer rarely meets a new holder. */
  timeoutMs: number;
  /** `same-origin` by default, so cookie sessions need nothing (§13). */
  credentials?: RequestCredentials;
  fetch?: typeof fetch;
  /** The holder's clock, which claim deadlines are in (§4). Default: the system clock. */
  clock?: Clock;
  /** The largest batch to send, whatever a server takes (§15.1). Default 50 rows, 256 KiB. */
  batch?: { maxRows?: number; maxBytes?: number };
}

type Fetched =
  | { kind: 'ok'; response: Response; body: string }
  | Exclude<TransportResult, { kind: 'response' }>;

/** Creates a {@link Transport} over `fetch`. Never throws for network faults (ports.ts). */
export function createFetchTransport(options: FetchTransportOptions): Transport {
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const allowed = new Set(options.allowedOrigins.map((origin) => new URL(origin).origin));
  const now = () => (options.clock ?? Date).now();
  const book = createBatchBook({
    maxItems: options.batch?.maxRows ?? BATCH_MIN_LIMITS.maxItems,
    maxBytes: options.batch?.maxBytes ?? BATCH_MIN_LIMITS.maxBytes,
  });

  const attempt = (url: URL, init: RequestInit, timeoutMs = options.timeoutMs) =>
    fetchOnce(doFetch, url, init, timeoutMs);
  const prepare = (rawUrl: string, base: string, owner: string) =>
    prepareRequest(options, allowed, rawUrl, base, owner);

  /**
   * One request under a claim's deadline (SPEC §4): `init` gets the credentials and builds the
   * request; the answer's `Link` teaches the batch book its origin's endpoint (§15.1).
   */
  async function deliver(
    rawUrl: string,
    owner: string,
    deadline: SendDeadline | undefined,
    init: (auth: Record<string, string>) => RequestInit,
  ): Promise<TransportResult> {
    if (deadline !== undefined && now() >= deadline.leaveBy) return lapsed('before it started');
    const prepared = await withinDeadline(prepare(rawUrl, options.baseUrl, owner), deadline, now);
    if (prepared === LAPSED) return lapsed(`while auth(${owner}) was awaited`);
    if (!('url' in prepared)) return prepared;
    // A legacy tab, which knows nothing of claims, may have sent a row of the record meanwhile.
    if (deadline?.clear !== undefined && !(await deadline.clear())) return RECORD_BUSY;
    const request = init(prepared.auth);
    // The last look before the wire: whatever the hook or the assembly took counts (§4).
    if (deadline !== undefined && now() >= deadline.leaveBy) return lapsed('before it could leave');
    const fetched = await attempt(
      prepared.url,
      { ...request, credentials: options.credentials ?? 'same-origin' },
      deadline === undefined
        ? options.timeoutMs
        : Math.min(options.timeoutMs, deadline.abortAt - now()),
    );
    if (fetched.kind !== 'ok') return fetched;
    const headers = lowerCaseHeaders(fetched.response.headers);
    book.noteLink(prepared.url, headers[HEADER.link]);
    return { kind: 'response', status: fetched.response.status, headers, body: fetched.body };
  }

  const send: Transport['send'] = (request, ctx) =>
    deliver(request.url, ctx.owner, ctx.deadline, (auth) => {
      const headers = new Headers(request.headers);
      // A row that names its key header (or none, §22) carries it as stored; older rows may not.
      if (request.keyHeader === undefined && !headers.has(HEADER.idempotencyKey)) {
        headers.set(HEADER.idempotencyKey, formatIdempotencyKey(request.requestId));
      }
      for (const [name, value] of Object.entries(auth)) headers.set(name, value);
      return { method: request.method, headers, body: request.body };
    });

  /** Resolves a URL as request URLs are; undefined when it is none or not an allowed origin. */
  const resolve = (rawUrl: string): URL | undefined => {
    try {
      const url = new URL(rawUrl, options.baseUrl);
      return allowed.has(url.origin) ? url : undefined;
    } catch {
      return undefined;
    }
  };

  return {
    send,

    batchRoute(request, ctx) {
      // The batch protocol carries the key as Idempotency-Key: rows with their own go alone.
      if (request.keyHeader !== undefined) return undefined;
      const target = resolve(request.url);
      const configured = ctx.url === undefined ? undefined : resolve(ctx.url);
      if (target === undefined || (ctx.url !== undefined && configured === undefined))
        return undefined;
      return book.route(target, configured);
    },

    sendBatch(route, requests, ctx) {
      const single = (request: RowRequest) =>
        send(request, { owner: ctx.owner, collection: '', deadline: ctx.deadline });
      const post = (url: string, body: string) =>
        deliver(url, ctx.owner, ctx.deadline, (auth) => ({
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body,
        }));
      return fetchBatches({ book, baseUrl: options.baseUrl, post, single }, route, requests);
    },

    async lookupReceipt(requestId, ctx): Promise<ReceiptLookup> {
      // The lookup lives at the origin of the request it is about (§15).
      const path = `/idempotency/${encodeURIComponent(requestId)}`;
      const prepared = await prepare(path, ctx.url, ctx.owner);
      if (!('url' in prepared)) return { kind: 'error', message: prepared.kind };
      return receiptLookup(
        await attempt(prepared.url, {
          method: 'GET',
          headers: prepared.auth,
          credentials: options.credentials ?? 'same-origin',
        }),
      );
    },

    async lookupHistory(url, ctx): Promise<HistoryLookup> {
      const prepared = await prepare(url, options.baseUrl, ctx.owner);
      if (!('url' in prepared)) return historyUnreached(prepared);
      return historyLookup(
        await attempt(prepared.url, {
          method: 'GET',
          headers: prepared.auth,
          credentials: options.credentials ?? 'same-origin',
        }),
      );
    },
  };
}

/** One fetch within `timeoutMs`, its body read; a fault or the timeout as a result, not thrown. */
async function fetchOnce(
  doFetch: typeof fetch,
  url: URL,
  init: RequestInit,
  timeoutMs: number,
): Promise<Fetched> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const response = await doFetch(url.href, {
      ...init,
      signal: controller.signal,
      cache: 'no-store',
    });
    return { kind: 'ok', response, body: await response.text() };
  } catch (error) {
    if (controller.signal.aborted) return { kind: 'timeout' };
    return {
      kind: 'network_error',
      message: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves the URL (against `base`, itself against the transport's base) and the credentials;
 * a refusal or missing auth ends the attempt early.
 */
async function prepareRequest(
  options: FetchTransportOptions,
  allowed: ReadonlySet<string>,
  rawUrl: string,
  base: string,
  owner: string,
): Promise<
  { url: URL; auth: Record<string, string> } | Exclude<TransportResult, { kind: 'response' }>
> {
  let url: URL;
  try {
    url = new URL(rawUrl, new URL(base, options.baseUrl));
  } catch {
    return { kind: 'refused', code: 'origin_not_allowed', message: `invalid URL ${rawUrl}` };
  }
  if (!allowed.has(url.origin)) {
    return {
      kind: 'refused',
      code: 'origin_not_allowed',
      message: `${url.origin} is not in allowedOrigins`,
    };
  }
  let auth: Record<string, string> | null;
  try {
    auth = await options.auth(owner);
  } catch (error) {
    // The app's hook failed to get a token (often offline itself): retry later, send nothing.
    const message = error instanceof Error ? error.message : String(error);
    return { kind: 'network_error', message: `auth(${owner}) failed: ${message}` };
  }
  if (auth === null) return { kind: 'auth_unavailable' };
  return { url, auth };
}

/** The server's answer to a receipt lookup (§15) as a {@link ReceiptLookup}. */
function receiptLookup(fetched: Fetched): ReceiptLookup {
  if (fetched.kind !== 'ok') return { kind: 'error', message: fetched.kind };
  // The lookup's answer publishes the retention too (§15): a "not found" is read against it.
  const retentionMs = parseRetention(fetched.response.headers.get(HEADER.retention) ?? undefined);
  const published = retentionMs === undefined ? {} : { retentionMs };
  if (fetched.response.status === 404) return { kind: 'not_found', ...published };
  if (!fetched.response.ok) return { kind: 'error', message: `http_${fetched.response.status}` };
  try {
    const parsed = JSON.parse(fetched.body) as { status?: unknown; body?: Json };
    if (typeof parsed.status !== 'number') return { kind: 'error', message: 'malformed receipt' };
    return { kind: 'found', status: parsed.status, body: parsed.body ?? null, ...published };
  } catch {
    return { kind: 'error', message: 'malformed receipt' };
  }
}

/** A history lookup that never left: refused, without credentials, or the auth hook failed. */
function historyUnreached(prepared: Exclude<TransportResult, { kind: 'response' }>): HistoryLookup {
  if (prepared.kind === 'refused')
    return { kind: 'error', code: 'origin_not_allowed', message: prepared.message };
  if (prepared.kind === 'auth_unavailable')
    return { kind: 'error', code: 'auth_required', message: 'no credentials' };
  const message = prepared.kind === 'network_error' ? prepared.message : prepared.kind;
  return { kind: 'error', code: 'network', message };
}

/** The server's answer to a record version lookup as a {@link HistoryLookup}. */
function historyLookup(fetched: Fetched): HistoryLookup {
  if (fetched.kind === 'timeout') return { kind: 'error', code: 'timeout', message: 'timeout' };
  if (fetched.kind !== 'ok') return { kind: 'error', code: 'network', message: fetched.kind };
  const { status } = fetched.response;
  if (status === 404) return { kind: 'not_found' };
  if (status === 401) return { kind: 'error', code: 'auth_required', message: 'http_401' };
  if (!fetched.response.ok) return { kind: 'error', code: 'network', message: `http_${status}` };
  const version = parseRecordVersion(fetched.body);
  return version === undefined
    ? { kind: 'error', code: 'network', message: 'malformed record version' }
    : { kind: 'found', version };
}

const LAPSED = Symbol('lapsed');

/** A send held back because another row of its record went on the wire first (SPEC §6.1). */
const RECORD_BUSY: TransportResult = {
  kind: 'not_sent',
  code: 'record_busy',
  message: 'another row of its record is on the wire',
};

/** A send refused because its claim's deadline passed before anything left (SPEC §4). */
function lapsed(when: string): TransportResult {
  return { kind: 'not_sent', code: 'lease_lapsed', message: `the claim's deadline passed ${when}` };
}

/**
 * `work`, or {@link LAPSED} once the deadline's `leaveBy` passes first (by `now`). Whatever the
 * app's hook does after that is ignored: its result is never used for this send.
 */
async function withinDeadline<T>(
  work: Promise<T>,
  deadline: SendDeadline | undefined,
  now: () => number,
): Promise<T | typeof LAPSED> {
  if (deadline === undefined) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expiry = new Promise<typeof LAPSED>((resolve) => {
    timer = setTimeout(() => resolve(LAPSED), Math.max(0, deadline.leaveBy - now()));
  });
  try {
    return await Promise.race([work, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** A `RecordVersionResponse` body (wire/protocol.ts) as a {@link RecordVersion}, or undefined. */
function parseRecordVersion(body: string): RecordVersion | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { revision, value, supersededBy, supersededAt } = parsed as Record<string, unknown>;
  if (typeof revision !== 'number' || value === undefined) return undefined;
  return {
    revision,
    value: value as Json,
    supersededBy: typeof supersededBy === 'string' ? supersededBy : null,
    supersededAt: typeof supersededAt === 'number' ? supersededAt : null,
  };
}

/** Response headers as a plain record with lower-case names (ports.ts contract). */
function lowerCaseHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name.toLowerCase()] = value;
  });
  return out;
}
