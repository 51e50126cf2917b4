import { outboxError } from '../model/outbox-error.ts';
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

/**
 * What each tunable may hold: a number from the least it may be, whole or not. A value outside
 * would stall every flush without a word (a concurrency of 0 waits for a send that never starts).
 */
const TUNING_LIMITS: Array<[option: string, least: number, whole?: 1]> = [
  ['leaseMs', 1],
  ['sendMarginMs', 0],
  ['concurrency', 1, 1],
  ['batchSize', 1, 1],
  ['plansPerCommit', 1, 1],
  ['backoff.baseMs', 0],
  ['backoff.maxMs', 0],
  ['maxRowBytes', 1],
  ['receipts.maxCount', 0, 1],
  ['receipts.maxAgeMs', 0],
  ['conflictLedgerMax', 0, 1],
  ['maxConflictSuccessors', 0, 1],
  ['batch.maxRows', 1, 1],
  ['batch.maxBytes', 1],
  ['batch.lingerMs', 0],
];

/**
 * Refuses tuning a flush could not run with (SPEC §14, G7): an `invalid_argument` error naming
 * the option, where the engine or the core is made, rather than flushes that never answer.
 */
export function checkTuning(tuning: Partial<OutboxTuning>): void {
  const fail = (option: string, expected: string) => {
    throw outboxError('invalid_argument', `invalid ${option}: expected ${expected}`, {
      argument: option,
    });
  };
  for (const [option, least, whole] of TUNING_LIMITS) {
    const value = option
      .split('.')
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], tuning);
    if (
      value !== undefined &&
      !(
        typeof value === 'number' &&
        Number.isFinite(value) &&
        value >= least &&
        (!whole || Number.isInteger(value))
      )
    )
      fail(option, `a ${whole ? 'whole ' : ''}number from ${least}`);
  }
  const lease = tuning.leaseMs ?? DEFAULT_TUNING.leaseMs;
  if ((tuning.sendMarginMs ?? 0) >= lease) fail('sendMarginMs', `less than leaseMs (${lease})`);
}
