import type { CollectionHandler } from '../model/handler.ts';
import type { Clock, IdSource, Logger, Transport } from '../model/ports.ts';
import type {
  EnqueueInput,
  EnqueueResult,
  FlushOptions,
  FlushReport,
  OutboxApi,
  OutboxEvent,
  RowView,
} from '../model/protocol.ts';
import type { OutboxRow } from '../model/row.ts';
import type { OutboxStore } from '../model/store.ts';

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

/** Everything a core needs: ports, handlers and identity. One core = one holder (§4). */
export interface OutboxCoreConfig extends Partial<OutboxTuning> {
  store: OutboxStore;
  transport: Transport;
  clock: Clock;
  ids: IdSource;
  logger?: Logger;
  handlers: Record<string, CollectionHandler>;
  /** This sender instance's holder id (a new one per worker start / per tab). */
  holderId: string;
  /** Library version written to `writer.bundle` (§4). */
  bundle: string;
  onEvent?: (event: OutboxEvent) => void;
  /**
   * Whether this holder has credentials for an owner now (§13). A holder that has them sends the
   * rows any holder held for want of them (`auth_required`, never sent). Absent: it has none.
   */
  hasCredentials?: (owner: string) => Promise<boolean>;
}

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

/** What the core's functions run with: the config with every tunable filled in. */
export type CoreDeps = OutboxCoreConfig & OutboxTuning;
