import { DEFAULT_BACKOFF } from '../plan/backoff.ts';
import { DEFAULT_LEASE_MS } from '../plan/lease.ts';

/** Tunables of one outbox core (SPEC §14); every field has a default. */
export interface OutboxTuning {
  /** Claim lease (§4). Default 10 s. */
  leaseMs: number;
  /**
   * How long before its claim ends a request may still leave (§4); default 20 % of the lease.
   * Whatever is awaited before the wire (the `auth` hook) counts against the claim.
   */
  sendMarginMs?: number;
  /** Records sent at once; rows of one record never overlap (§7, G4). Default 4. */
  concurrency: number;
  /** Rows read and claimed per selection batch (§7). Default 50. */
  batchSize: number;
  /**
   * Most claims and ACKs one transaction of a flush commits (§4 batching): an enqueue made
   * while a drain writes waits behind one such transaction at most. Default 16.
   */
  plansPerCommit: number;
  /** Exponential backoff with full jitter (§11). */
  backoff: { baseMs: number; maxMs: number };
  /** Largest request body accepted at enqueue, in bytes. Default 256 KiB. */
  maxRowBytes: number;
  /** Receipts kept per owner, by count and age (§2). */
  receipts: { maxCount: number; maxAgeMs: number };
  /** Conflict ledger entries kept per owner (§10). Default 100. */
  conflictLedgerMax: number;
  /** Conflict successors for one record in one flush before `conflict_storm` (§10). Default 3. */
  maxConflictSuccessors: number;
  /** Many rows per request where the server takes batches (§15.1); `false` sends each alone. */
  batch: BatchTuning | false;
}

/** How rows travel in batches (SPEC §15.1). */
export interface BatchTuning {
  /** Most rows in one batch. Default 50. */
  maxRows?: number;
  /** Most bytes of items in one batch. Default 256 KiB. */
  maxBytes?: number;
  /**
   * How long a flush that an enqueue triggered waits for more rows to fill a batch (the
   * scheduler's, §15.1); an explicit flush never waits. Default 5 ms in the worker, 0 in a page
   * sender.
   */
  lingerMs?: number;
}

/** Defaults of SPEC §4, §7, §10, §11, §14: the one table the worker, the page sender and tests read. */
export const DEFAULT_TUNING: OutboxTuning = {
  leaseMs: DEFAULT_LEASE_MS,
  concurrency: 4,
  batchSize: 50,
  plansPerCommit: 16,
  backoff: DEFAULT_BACKOFF,
  maxRowBytes: 256 * 1024,
  receipts: { maxCount: 500, maxAgeMs: 7 * 24 * 60 * 60 * 1000 },
  conflictLedgerMax: 100,
  maxConflictSuccessors: 3,
  batch: {},
};

/** How long an enqueue's flush in the worker waits to fill a batch (SPEC §15.1); a page sender does not wait. */
export const WORKER_LINGER_MS = 5;
