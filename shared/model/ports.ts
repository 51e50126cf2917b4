import type { RecordVersion } from './history.ts';
import type { Json } from './json.ts';
import type { RowRequest } from './row.ts';

/**
 * The ports through which the core meets the world (STYLE: pure core, thin shell). Planners and
 * the dispatcher never read clocks, make ids, fetch or open storage themselves.
 */

/** Wall-clock milliseconds. Tests pass a fixed or stepped clock. */
export interface Clock {
  now(): number;
}

/** Randomness: request/holder id hex and backoff jitter. */
export interface IdSource {
  /** 24 lowercase hex characters (SPEC §9). */
  hex24(): string;
  /** A number in [0, 1) for full-jitter backoff (§11). */
  random(): number;
}

/** Structured log sink; the default drops debug lines. */
export interface Logger {
  debug(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
}

/** What one HTTP attempt produced. Headers are lower-cased. Never throws for network faults. */
export type TransportResult =
  | { kind: 'response'; status: number; headers: Record<string, string>; body: string }
  | { kind: 'network_error'; message: string }
  | { kind: 'timeout' }
  | { kind: 'auth_unavailable' }
  | { kind: 'refused'; code: 'origin_not_allowed'; message: string }
  /**
   * Nothing left: the claim's deadline passed before the request could go (SPEC §4), or another
   * row of its record went on the wire first (§6.1).
   */
  | { kind: 'not_sent'; code: 'lease_lapsed' | 'record_busy'; message: string };

/**
 * When a claimed request must be on the wire by, and when it is aborted, in the holder's clock
 * (SPEC §4): everything awaited before it leaves (credentials, encoding) counts against the claim.
 */
export interface SendDeadline {
  /** The request is put on the wire only while this is still ahead: `expiresAt` − margin. */
  leaveBy: number;
  /** The claim's `expiresAt`: a request still running then is aborted. */
  abortAt: number;
  /**
   * The last look before the wire (SPEC §6.1), awaited once nothing else is: false when another
   * row of a record the request carries went on the wire since the claim, and it does not leave.
   */
  clear?: () => Promise<boolean>;
}

/** The outcome of a receipt lookup by request id (§8, §15 `GET /idempotency/<key>`). */
export type ReceiptLookup =
  | ({ kind: 'found'; status: number; body: Json } & PublishedRetention)
  | ({ kind: 'not_found' } & PublishedRetention)
  | { kind: 'error'; message: string };

/** The retention the server's answer published (`Idempotency-Retention`, SPEC §15), in ms. */
export interface PublishedRetention {
  retentionMs?: number;
}

/**
 * The outcome of reading a record version from the server (§10.1). `error` says why the server
 * could not be asked or did not answer, as the error code a caller can retry on.
 */
export type HistoryLookup =
  | { kind: 'found'; version: RecordVersion }
  | { kind: 'not_found' }
  | {
      kind: 'error';
      code: 'network' | 'timeout' | 'auth_required' | 'origin_not_allowed';
      message: string;
    };

/** Sends stored request bytes, adding credentials at send time (auth is never stored, §2). */
export interface Transport {
  /** `deadline`, when given, bounds the attempt by its claim (SPEC §4); past it, `not_sent`. */
  send(
    request: RowRequest,
    ctx: { owner: string; collection: string; deadline?: SendDeadline },
  ): Promise<TransportResult>;
  lookupReceipt(
    requestId: string,
    ctx: { owner: string; collection: string; url: string },
  ): Promise<ReceiptLookup>;
  /**
   * Reads one version of a record from `url` (a handler's `historyUrl`) with the owner's
   * credentials (SPEC §10.1). A transport without it cannot restore (`history_unavailable`).
   */
  lookupHistory?(url: string, ctx: { owner: string; collection: string }): Promise<HistoryLookup>;
  /**
   * The batch endpoint a request may travel through (SPEC §15.1) and its limits: `url`, the
   * handler's configured endpoint, when given; else the one the request's origin advertised.
   * Undefined sends the request alone: the origin takes no batches, advertised none, or the
   * endpoint is on another origin. `'unknown'` while none is configured and the origin has not
   * answered since this transport began: the request goes alone, but its answer may advertise
   * one. A transport without it sends every request alone.
   */
  batchRoute?(
    request: RowRequest,
    ctx: { owner: string; url?: string },
  ): BatchRoute | 'unknown' | undefined;
  /**
   * Sends claimed requests through one batch route: one result per request, in order, each what
   * the request alone would have got (a batch-level 401, 429, 503 or lost answer repeated for
   * every request). Requests that the route cannot carry together still go, alone or in smaller
   * batches, under the same deadline. `'unsupported'` when the endpoint took none of them (it
   * takes no batches, or refused this envelope) and nothing ran: the caller sends each request
   * alone under its claim.
   */
  sendBatch?(
    route: BatchRoute,
    requests: readonly RowRequest[],
    ctx: { owner: string; deadline: SendDeadline },
  ): Promise<TransportResult[] | 'unsupported'>;
}

/** Where a batch of requests goes and how much it may carry (SPEC §15.1). */
export interface BatchRoute {
  /** Absolute URL of the batch endpoint. */
  url: string;
  /** Most requests in one batch. */
  maxRows: number;
  /** Most bytes of items in one batch. */
  maxBytes: number;
}
