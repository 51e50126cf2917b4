import type {
  EnqueueInput,
  EnqueueResult,
  FlushOptions,
  FlushReport,
  OutboxApi,
  RowView,
} from '../model/page-api.ts';
import type { OutboxRow } from '../model/row.ts';

/** One holder's outbox: per-owner APIs over one store, and the flush loop. */
export interface OutboxCore {
  readonly holderId: string;
  /** The page API bound to one owner (G6): every read and write is scoped to it. */
  forOwner(owner: string): OwnerApi;
  /**
   * Runs the flush loop for one owner: select → claim → send → settle until nothing is
   * sendable. One loop per owner at a time; calls during a flush coalesce into one more pass.
   */
  flush(owner: string, options?: FlushOptions): Promise<FlushReport>;
}

/** Options of an enqueue made by code in the worker, never by a page (§22). */
export interface WorkerEnqueueOptions {
  /**
   * Keep the id known for good: a tombstone is written with the row, so enqueueing the same id
   * again after its receipt was pruned still answers `existing`. For imports from another queue.
   */
  keepId?: boolean;
  /**
   * The request already left once, outside the outbox (a Workbox route's own attempt, §22), and
   * ended with this error code (`network`, `http_503`, ...): the row is written as attempted.
   */
  attempted?: { code: string };
}

/** The owner API as the core hands it to the endpoint and the engine. */
export interface OwnerApi extends OutboxApi {
  /** `enqueue` of the page API (§13), plus what only worker code may ask for. */
  enqueue(input: EnqueueInput, options?: WorkerEnqueueOptions): Promise<EnqueueResult>;
  /** Queues held rows again; with `code`, only those held for that reason (`lastErrorCode`). */
  resumeHeld(only?: { code: string }): Promise<number>;
  /** Views (status, holder) of rows already read, in the order given (live views, §13). */
  viewsOf(rows: OutboxRow[]): Promise<RowView[]>;
}
