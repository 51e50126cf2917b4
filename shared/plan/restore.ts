import type { ErrorCode } from '../model/errors.ts';
import type { CollectionHandler } from '../model/handler.ts';
import type { HistoryRef } from '../model/history.ts';
import type { EnqueueInput } from '../model/page-api.ts';
import type { HistoryLookup } from '../model/ports.ts';
import { sha256Hex } from '../model/sha256.ts';
import type { ConflictLedgerEntry } from '../model/store.ts';

/**
 * `restore(conflictId)` (SPEC §10.1): what a settled conflict overwrote, written back as a new
 * durable mutation — an ordinary update through the outbox at the ledger's final revision, with
 * its own key, so every rule (successors, coalescing, conflicts, quarantine) applies to it. The
 * owner API reads the ledger, asks {@link planRestoreSource} what to fetch, reads that version
 * from the server, and enqueues what {@link planRestore} returns. Receipts, tombstones and ledger
 * entries are never deleted by it.
 */

/**
 * The row id (and so the idempotency key) of a conflict's restore: derived from the conflict id,
 * so a repeated `restore` — a retry after a dead port, after a restart — enqueues the same row,
 * and `enqueue` is idempotent by id (§9).
 */
export function restoreRowId(conflictId: string): string {
  return `restore-${sha256Hex(`sw-outbox:restore:${conflictId}`).slice(0, 24)}`;
}

/** Why a restore cannot be done: an error code with its message and details. */
export interface RestoreRefusal {
  kind: 'refuse';
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** What to read from the server, or the row of an earlier restore, or why there is nothing. */
export type RestoreSource =
  | { kind: 'lookup'; entry: ConflictLedgerEntry; ref: HistoryRef; url: string }
  | { kind: 'restored'; rowId: string }
  | RestoreRefusal;

function unavailable(
  conflictId: string,
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
): RestoreRefusal {
  return {
    kind: 'refuse',
    code: 'history_unavailable',
    message,
    details: { conflictId, reason, ...extra },
  };
}

/**
 * Decides from the ledger entry alone (no server yet) whether a restore is possible: the entry
 * must exist, name a version the server keeps (`historyRef`), and have been an edit whose final
 * revision is known — a record the resend deleted has nothing to write the version back into.
 * An entry restored before answers with that row, without asking the server again.
 */
export function planRestoreSource(
  entry: ConflictLedgerEntry | undefined,
  conflictId: string,
  handler: CollectionHandler | undefined,
): RestoreSource {
  if (entry === undefined)
    return {
      kind: 'refuse',
      code: 'not_found',
      message: 'No conflict ledger entry with this id exists for this owner.',
      details: { conflictId },
    };
  // A damaged `restoredBy` names no row: the entry is restored again, under the row id its
  // conflict derives, which a restore already made holds (the plan is then stale).
  const rowId = (entry.restoredBy as { rowId?: unknown } | null | undefined)?.rowId;
  if (typeof rowId === 'string') return { kind: 'restored', rowId };
  const ref = entry.historyRef ?? null;
  if (ref === null)
    return unavailable(
      conflictId,
      'no_history',
      'The server kept no history for this conflict: what it overwrote cannot be read back.',
    );
  if (entry.kind === 'delete')
    return unavailable(
      conflictId,
      'record_deleted',
      'The resend deleted the record; there is no record to write the old version back into.',
    );
  if (entry.finalRevision === null)
    return unavailable(
      conflictId,
      'final_revision_unknown',
      'The final revision of the record is unknown, so the restore has no revision to write at.',
    );
  if (handler === undefined)
    return {
      kind: 'refuse',
      code: 'unknown_collection',
      message: `No handler is configured for collection "${entry.collection}".`,
      details: { conflictId, collection: entry.collection },
    };
  const url = handler.historyUrl?.(ref);
  if (url === undefined)
    return unavailable(
      conflictId,
      'no_history_url',
      `The handler of "${entry.collection}" does not say where the server keeps history.`,
    );
  return { kind: 'lookup', entry, ref, url };
}

/** The update to enqueue and the ledger entry to write in its transaction, or why not. */
export type RestorePlan =
  | { kind: 'enqueue'; input: EnqueueInput & { id: string }; ledger: ConflictLedgerEntry }
  | RestoreRefusal;

/**
 * Turns the server's answer into the restore: an update of the record to the version's value at
 * the ledger's final revision, under {@link restoreRowId}, and the ledger entry marked restored
 * by that row. A version the server no longer has (expired, or never kept) is
 * `history_unavailable`; a server that could not be asked is the lookup's retryable code, with
 * nothing enqueued. A version other than the one named is never written back.
 */
export function planRestore(
  entry: ConflictLedgerEntry,
  ref: HistoryRef,
  lookup: HistoryLookup,
  ctx: { now: number },
): RestorePlan {
  const conflictId = entry.successorId;
  if (lookup.kind === 'error')
    return {
      kind: 'refuse',
      code: lookup.code,
      message: `The server could not be asked for the overwritten version: ${lookup.message}`,
      details: { conflictId, retryable: true },
    };
  if (lookup.kind === 'not_found')
    return unavailable(
      conflictId,
      'expired',
      'The server no longer has the overwritten version (its history expired or was never kept).',
      { revision: ref.supersededRevision },
    );
  if (lookup.version.revision !== ref.supersededRevision)
    return unavailable(
      conflictId,
      'other_revision',
      `The server answered with revision ${lookup.version.revision}, not ${ref.supersededRevision}.`,
    );
  const id = restoreRowId(conflictId);
  return {
    kind: 'enqueue',
    input: {
      id,
      collection: entry.collection,
      kind: 'update',
      targetId: entry.targetId,
      baseRevision: entry.finalRevision,
      payload: lookup.version.value,
    },
    ledger: { ...entry, restoredBy: { rowId: id, at: ctx.now } },
  };
}
