import { setImmediate as yieldToRequests } from 'node:timers/promises';
import type { ServerStore } from './store/port.ts';

/** Options of the ledger sweeper. */
export interface SweeperOptions {
  /** The reference server's store, or a kit's ledger (server/kit/). */
  store: Pick<ServerStore, 'sweepExpired'>;
  retentionMs: number;
  /** Default 10 minutes. */
  intervalMs?: number;
  /** Entries deleted per statement. Default 500: short write locks, requests interleave. */
  batchSize?: number;
  now?: () => number;
}

/** A running expiry sweep. */
export interface Sweeper {
  /** Sweeps everything expired now, batch by batch; resolves to the number deleted. */
  sweep(): Promise<number>;
  stop(): void;
}

/**
 * Deletes ledger entries older than the retention (SPEC §15: at least 7 days) in small batches,
 * yielding to requests between batches so a large backlog never holds the write lock for long.
 * A failed sweep is retried at the next interval; it never affects requests.
 */
export function startSweeper(options: SweeperOptions): Sweeper {
  const now = options.now ?? Date.now;
  const batchSize = options.batchSize ?? 500;
  let running: Promise<number> | undefined;

  async function sweepAll(): Promise<number> {
    // Whole milliseconds, as the ledgers keep them: PostgreSQL's `bigint` refuses a fraction.
    const cutoff = Math.floor(now() - options.retentionMs);
    let total = 0;
    for (;;) {
      const deleted = await options.store.sweepExpired(cutoff, batchSize);
      total += deleted;
      if (deleted < batchSize) return total;
      await yieldToRequests();
    }
  }

  function sweep(): Promise<number> {
    running ??= sweepAll().finally(() => {
      running = undefined;
    });
    return running;
  }

  const timer = setInterval(
    () => {
      sweep().catch(() => {});
    },
    options.intervalMs ?? 10 * 60 * 1000,
  );
  timer.unref();
  return {
    sweep,
    stop: () => clearInterval(timer),
  };
}
