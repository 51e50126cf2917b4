import type { EnqueueInput } from './enqueue-input.ts';
import type { OutboxRow, RowStatus } from './row.ts';
import type { ConflictLedgerEntry, Receipt } from './store.ts';

/**
 * The page ⇄ worker API (SPEC §13), described once as types. The service worker exposes an
 * {@link OutboxApi} over Comlink; the page sender runs the same object in the tab.
 */

export { ID_PATTERN } from './id-pattern.ts';
/** What the app hands to `enqueue` (checked in the worker by `EnqueueInputSchema`). */
export type { EnqueueInput };

/** How an enqueue ended: a new row, or the existing outcome for a repeated id (§9). */
export interface EnqueueResult {
  id: string;
  /** The request id that will carry this intent; absent for intent rows (no request yet, §8). */
  requestId?: string;
  targetId: string;
  outcome: 'queued' | 'successor' | 'intent' | 'coalesced' | 'cancelled' | 'existing';
}

/**
 * A row as the UI sees it: the stored row plus its derived status (never stored). `row` is the
 * row as decoded (SPEC §2): a row of an unknown format version comes with the fields the engine
 * groups by made safe to read, a quarantined one as its `row_corrupt` row, so every view's row has
 * the row's fields (`row.targetId`, `row.payload`, …) and keeps any unknown ones.
 */
export interface RowView {
  row: OutboxRow;
  id: string;
  status: RowStatus;
  /** Whether a live claim is held on it right now, and by whom. */
  holderId?: string;
}

/** Which rows a view or `rows()` covers: a collection, one record, or everything. */
export interface RowFilter {
  collection?: string;
  targetId?: string;
}

/** Counts of one owner's rows per display status, and the oldest row's `savedAt`. */
export interface OutboxStats {
  counts: Record<RowStatus, number>;
  total: number;
  oldestSavedAt: number | null;
}

/** Options of `flush()`. */
export interface FlushOptions {
  /** Ignore `nextAttemptAt` (user action, `online`, SPEC §11). */
  force?: boolean;
}

/** What one flush did. `stopped` names the device-side reason a flush ended early. */
export interface FlushReport {
  claimed: number;
  succeeded: number;
  transient: number;
  held: number;
  blocked: number;
  conflicts: number;
  stale: number;
  /** Rows still waiting for a retry (transient failures or backoff). */
  remaining: number;
  /** The earliest `nextAttemptAt` among waiting rows, for the wake-up timer (§12). */
  nextAttemptAt: number | null;
  stopped?: 'conflict_storm' | 'successor_persist_failed' | 'storage' | 'offline';
}

/** A report of a flush that did nothing. */
export function emptyFlushReport(): FlushReport {
  return {
    claimed: 0,
    succeeded: 0,
    transient: 0,
    held: 0,
    blocked: 0,
    conflicts: 0,
    stale: 0,
    remaining: 0,
    nextAttemptAt: null,
  };
}

/**
 * Why a queue is stalled. The library heals the first two itself (§23); the others wait for the
 * app or the network: `held` for credentials, `blocked` for `retry`/`discard`, `quota` for space,
 * `unreachable` for a server that has not answered for longer than the bound.
 */
export type StallCause =
  | 'no_sender'
  | 'not_attempted'
  | 'quota'
  | 'held'
  | 'blocked'
  | 'unreachable';

/** Storage as the browser reports it; fields are absent where the API is. */
export interface StorageState {
  persisted?: boolean | undefined;
  usage?: number | undefined;
  quota?: number | undefined;
}

/** What `health()` answers (SPEC §23). */
export interface OutboxHealth {
  /** When it was measured. */
  at: number;
  counts: Record<RowStatus, number>;
  total: number;
  /** Age of the oldest row still in the outbox, null when it is empty. */
  oldestPendingAgeMs: number | null;
  lastSuccessAt: number | null;
  /** The earliest planned attempt: the wake-up timer or the first deferred row's retry. */
  nextAttemptAt: number | null;
  /** Holder ids of the senders seen alive: the one that answered and any holding a claim. */
  senders: { worker?: string; page?: string };
  storage: StorageState;
  /** The first cause of {@link causes}, or null when the queue is healthy. */
  stalled: StallCause | null;
  /** Every cause that holds now, most urgent first. */
  causes: StallCause[];
}

/** Telemetry events (SPEC §14 `onEvent`); `type` tags the union (STYLE). */
export type OutboxEvent =
  | { type: 'enqueued'; id: string; outcome: EnqueueResult['outcome'] }
  | { type: 'claimed'; id: string; holderId: string; fence: number }
  | { type: 'sent'; id: string; requestId: string; fence: number }
  | { type: 'settled'; id: string; outcome: string; stale: boolean; status?: number }
  | { type: 'converted'; intentId: string; into: string }
  | { type: 'conflict'; id: string; successorId?: string; currentRevision: number | null }
  | { type: 'storm'; id: string; targetId: string }
  | { type: 'held'; id: string }
  | { type: 'blocked'; id: string; code: string }
  | { type: 'quarantined'; id: string; issues: string }
  /**
   * The watchdog saw a stall (§23), once per cause until a row goes out again: `healed`
   * when it flushed and registered sync again itself, `reported` when only the app can act.
   */
  | { type: 'stalled'; cause: StallCause; action: 'healed' | 'reported' };

/** The API the worker exposes to pages (and the page sender runs locally). */
export interface OutboxApi {
  enqueue(input: EnqueueInput): Promise<EnqueueResult>;
  rows(filter?: RowFilter): Promise<RowView[]>;
  row(id: string): Promise<RowView | undefined>;
  flush(options?: FlushOptions): Promise<FlushReport>;
  stats(): Promise<OutboxStats>;
  resumeHeld(): Promise<number>;
  retry(id: string): Promise<void>;
  discard(id: string): Promise<void>;
  conflicts(options?: { limit?: number }): Promise<ConflictLedgerEntry[]>;
  /**
   * Writes back what a settled conflict overwrote (SPEC §10.1): reads that version from the
   * server and enqueues an ordinary update of it at the ledger's final revision, with its own
   * key, recording the row on the ledger entry. Idempotent per conflict (`conflictId` is the
   * entry's `successorId`): a repeated call answers with the same row.
   */
  restore(conflictId: string): Promise<EnqueueResult>;
  receipts(options?: { limit?: number }): Promise<Receipt[]>;
  receipt(requestId: string): Promise<Receipt | undefined>;
}

/** What a connection tells about its sender (§23): the queue's health and its recent events. */
export interface OutboxDiagnostics {
  /** The queue's health and, when due rows are not going out, why (§23). */
  health(): Promise<OutboxHealth>;
  /**
   * The sender's recent events as JSON lines (§23), for bug reports: never credentials; the
   * payloads of this owner's rows still in the outbox only with `payloads: true`.
   */
  exportTrace(options?: { payloads?: boolean }): Promise<string>;
}
