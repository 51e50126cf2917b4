import type { BatchItem } from 'sw-outbox/wire';
import type { Answer } from '../problem.ts';

/**
 * What a server can add around the kit's steps without changing them: counters, fault
 * injection, request logs, rate limits. The reference server (server/app.ts) keeps its admin
 * routes (`/__faults`, `/__stats`, `/__requests`) on these; an app's own metrics fit the same.
 */

/** A request as the kit routes it: its method, the route pattern, and whether it is the batch. */
export interface KitTarget {
  method: string;
  /** The route pattern (`/api/todos/:id`), the batch path, or `/idempotency/:key`. */
  route: string;
  /** The batch request itself (SPEC §15.1), not one of its items. */
  batch: boolean;
}

/** A write on its way to the ledger: a request alone or a batch item, with its principal and key. */
export interface KitWriteTarget {
  method: string;
  /** The write route's pattern. */
  route: string;
  principal: string;
  /** The idempotency key; empty before check 1 has read it. */
  key: string;
}

/** Counters of what the kit answered (the names are the reference server's `/__stats`). */
export type KitCounter = 'replays' | 'inProgress' | 'conflicts' | 'keyReused' | 'batches';

/** Where the kit reports what it did; every method is optional in effect. */
export interface KitStats {
  count(principal: string, counter: KitCounter): void;
  /** A write committed: exactly one effect for this key. */
  effect?(principal: string, key: string): void;
}

/** The steps around the transactions of one request (a write alone, or a batch's writes). */
export interface KitCommitPhase {
  /** Before the transactions, while every key is held in progress (copies get 409). */
  before?(): void | Promise<void>;
  /**
   * After the transactions committed and before the answer: `'drop'` loses the answer (the
   * effects stay; the adapter cuts the connection, as a network would), anything else sends it.
   */
  after?(applied: readonly KitWriteTarget[]): 'drop' | undefined | Promise<'drop' | undefined>;
}

/** Hooks of {@link OutboxKitOptions}. */
export interface KitHooks {
  /**
   * A batch item, after its route matched and before check 1: an answer refuses that item alone
   * (its request alone would have been refused by `admit`), the others go on.
   */
  admitItem?(item: KitWriteTarget): Answer | undefined;
  /** The writes of one request are about to run (see {@link KitCommitPhase}). */
  commit?(
    writes: readonly KitWriteTarget[],
    batch: KitTarget | undefined,
  ): KitCommitPhase | undefined;
  /** A batch's envelope was read (before any item runs), with the request it came in. */
  batchRead?(request: Request, items: readonly BatchItem[]): void;
}

/** No counters. */
export const NO_STATS: KitStats = { count() {} };

/**
 * The answer a `'drop'` turns into: {@link OutboxKit.handle} gives `Response.error()` (a network
 * error, `type: "error"`), which the Node adapters answer by destroying the connection.
 */
export const DROPPED: Answer = { status: 0, headers: {}, body: '' };
