import { traitsOf } from '../../shared/model/error-codes.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import type { EnqueueResult } from '../../shared/model/page-api.ts';
import { systemClock } from '../../shared/runtime/clock.ts';
import {
  REQUEST_KIND,
  REQUESTS_COLLECTION,
  requestTarget,
} from '../../shared/wire/requests-handler.ts';
import type { OutboxEngine } from '../engine.ts';
import { capturedEntry, importedRowId, importMeta } from './entry.ts';
import { openWorkboxQueueDb, type WorkboxQueueDb } from './queue-db.ts';
import { askForSync } from './sync.ts';

/**
 * The one-time move of a `workbox-background-sync` queue into the outbox (SPEC §22), entry by
 * entry in queue order. Two IndexedDB databases cannot share a transaction, so each entry moves
 * in two steps, each its own transaction:
 *
 * 1. enqueue the entry as a `requests` row whose id is derived from the entry
 *    ({@link importedRowId}), with `keepId`: the row and a `kept` tombstone under its id commit
 *    together, with strict durability;
 * 2. only then delete the entry from Workbox's queue.
 *
 * Never neither: the entry leaves Workbox's queue only after step 1 committed. Never both: while
 * an entry is in both databases (a kill between the steps) it is the outbox's — the next pass
 * makes the same id, step 1 answers `existing` (the row, its receipt, or for good the tombstone:
 * it is never pruned), writes nothing, and step 2 finishes the move. So however often a pass is
 * cut short and run again, each entry becomes exactly one row. A pass runs on `activate` (inside
 * the event, so requests to the route wait for it and queue behind the imported rows of their
 * URL) and at every later start of the worker, which finishes a pass that a kill cut short.
 */

/** Options of {@link importWorkboxQueue}. */
export interface WorkboxImportOptions {
  /** The queue's name, as given to `new BackgroundSyncPlugin(name)` / `new Queue(name)`. */
  queueName: string;
  /** The owner the imported rows belong to (G6). */
  owner: string;
  /** The key's header for these rows, `Idempotency-Key` by default; null: none (see the plugin). */
  idempotencyHeader?: string | null;
  /** More header names to keep out of storage besides Authorization, Proxy-Authorization, Cookie. */
  dropHeaders?: readonly string[];
  /** Telemetry; `imported` fires once the row is durable, before the entry leaves Workbox. */
  onEvent?: (event: WorkboxImportEvent) => void;
  /** Workbox's database name and the IndexedDB factory, for tests. */
  workboxDbName?: string;
  indexedDB?: IDBFactory;
}

/** What a pass reports. */
export type WorkboxImportEvent =
  | {
      type: 'imported';
      trigger: string;
      entryId: number;
      rowId: string;
      /** `existing` when an earlier, cut-short pass had already made the row. */
      outcome: EnqueueResult['outcome'];
    }
  | { type: 'left'; trigger: string; entryId: number; reason: string }
  | { type: 'done'; trigger: string; report: WorkboxImportReport }
  | { type: 'failed'; trigger: string; error: string };

/** One pass: what moved, what was already moved, what stays in Workbox's queue and why. */
export interface WorkboxImportReport {
  imported: number;
  /** Entries a cut-short pass had already made rows of: only deleted from Workbox now. */
  existing: number;
  left: Array<{ entryId: number; reason: string }>;
  ms: number;
}

/** An import wired to a worker: its passes, one at a time. */
export interface WorkboxImport {
  /** Runs a pass now (after any running one). */
  run(trigger?: string): Promise<WorkboxImportReport>;
}

/**
 * Imports a Workbox queue once, on activation, and finishes at any later start what a kill cut
 * short (SPEC §22). Call it at the top level of the worker, beside `engine.attach(self)`; the
 * engine needs `collections: { requests: requestsHandler() }`.
 */
export function importWorkboxQueue(
  scope: ServiceWorkerGlobalScope,
  engine: OutboxEngine,
  options: WorkboxImportOptions,
): WorkboxImport {
  let last: Promise<unknown> = Promise.resolve();
  const run = (trigger = 'api'): Promise<WorkboxImportReport> => {
    const next = last.then(() => runPass(engine, options, trigger));
    last = next.catch(() => undefined);
    return next;
  };
  const quietly = (trigger: string) =>
    run(trigger).then(
      () => undefined,
      () => undefined,
    );
  scope.addEventListener('activate', (event) => event.waitUntil(quietly('activate')));
  // A later start of an activated worker: finish what a kill cut short. (While a new version
  // installs, the old one may still replay its queue; the move waits for activation.)
  if (scope.serviceWorker?.state === 'activated') void quietly('start');
  return { run };
}

/** One pass over the queue; see the module comment for why each entry moves exactly once. */
export async function runPass(
  engine: OutboxEngine,
  options: WorkboxImportOptions,
  trigger: string,
): Promise<WorkboxImportReport> {
  const started = systemClock.now();
  const emit = (event: WorkboxImportEvent) => {
    try {
      options.onEvent?.(event);
    } catch {
      // Telemetry must not stop a move half-way.
    }
  };
  const report: WorkboxImportReport = { imported: 0, existing: 0, left: [], ms: 0 };
  let db: WorkboxQueueDb | undefined;
  try {
    db = await openWorkboxQueueDb(options.workboxDbName, options.indexedDB);
    const entries = db === undefined ? [] : await db.entries(options.queueName);
    if (db !== undefined && entries.length > 0) {
      await moveEntries(engine, options, db, entries, report, (event) =>
        emit({ ...event, trigger }),
      );
      askForSync().catch(() => undefined);
      engine.flush({ owners: [options.owner] }).catch(() => undefined);
    }
  } catch (error) {
    emit({ type: 'failed', trigger, error: String(error) });
    throw error;
  } finally {
    db?.close();
  }
  report.ms = systemClock.now() - started;
  emit({ type: 'done', trigger, report });
  return report;
}

type PassEvent =
  | Omit<Extract<WorkboxImportEvent, { type: 'imported' }>, 'trigger'>
  | Omit<Extract<WorkboxImportEvent, { type: 'left' }>, 'trigger'>;

async function moveEntries(
  engine: OutboxEngine,
  options: WorkboxImportOptions,
  db: WorkboxQueueDb,
  entries: Awaited<ReturnType<WorkboxQueueDb['entries']>>,
  report: WorkboxImportReport,
  emit: (event: PassEvent) => void,
): Promise<void> {
  const api = await engine.forOwner(options.owner);
  const captureOptions = {
    ...(options.dropHeaders ? { dropHeaders: options.dropHeaders } : {}),
    ...(options.idempotencyHeader === undefined
      ? {}
      : { idempotencyHeader: options.idempotencyHeader }),
  };
  // A URL with an entry left behind keeps its later entries behind too: order per URL (G4).
  const stuck = new Set<string>();
  const leave = (entryId: number, reason: string, target?: string) => {
    if (target !== undefined) stuck.add(target);
    report.left.push({ entryId, reason });
    emit({ type: 'left', entryId, reason });
  };
  let marked = false;
  for (const entry of entries) {
    const captured = capturedEntry(entry, captureOptions);
    // An entry made with credentials: its row waits for the owner's, never goes without (§13).
    if (!marked && carriedCredentials(entry)) {
      await engine.requireCredentials(options.owner);
      marked = true;
    }
    const url = entry.requestData?.url;
    if ('unimportable' in captured) {
      leave(
        entry.id,
        captured.unimportable,
        typeof url === 'string' ? requestTarget(url) : undefined,
      );
      continue;
    }
    const targetId = requestTarget(captured.url);
    if (stuck.has(targetId)) {
      leave(entry.id, 'behind_left_entry', targetId);
      continue;
    }
    const rowId = importedRowId(entry);
    let result: EnqueueResult;
    try {
      // Step 1: the row and its kept id, in one strictly durable transaction.
      result = await api.enqueue(
        {
          id: rowId,
          collection: REQUESTS_COLLECTION,
          kind: REQUEST_KIND,
          targetId,
          payload: { ...captured },
          meta: importMeta(entry),
        },
        { keepId: true },
      );
    } catch (error) {
      // Enqueue failures that retrying will not cure: the entry stays in Workbox's queue.
      if (error instanceof OutboxError && traitsOf(error.code)?.permanent === true) {
        leave(entry.id, error.code, targetId);
        continue;
      }
      throw error;
    }
    if (result.outcome === 'existing') report.existing++;
    else report.imported++;
    emit({ type: 'imported', entryId: entry.id, rowId, outcome: result.outcome });
    // Step 2: the entry leaves Workbox's queue only now that its row is durable.
    await db.delete(entry.id);
  }
}

/** Whether a queued request was made with an `Authorization` header (the import drops it). */
function carriedCredentials(entry: { requestData?: { headers?: unknown } }): boolean {
  const headers = entry.requestData?.headers;
  return (
    typeof headers === 'object' &&
    headers !== null &&
    Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')
  );
}
