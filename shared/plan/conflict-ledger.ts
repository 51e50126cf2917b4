import type { ConflictEvidence } from '../model/conflict-evidence.ts';
import type { OutboxRow } from '../model/row.ts';
import type { ConflictLedgerEntry, Receipt } from '../model/store.ts';
import { ASSUMED_RETENTION_MS } from './key-retention.ts';

/** The ledger summary for a conflict successor's success, or undefined for other rows (§10). */
export function ledgerEntryFor(row: OutboxRow, receipt: Receipt): ConflictLedgerEntry | undefined {
  const evidence = row.conflict as ConflictEvidence | undefined;
  if (evidence?.version !== 1) return undefined;
  const remote = evidence.copy.remote;
  return {
    successorId: row.id,
    originalId: evidence.predecessor.requestId,
    owner: row.owner,
    collection: row.collection,
    targetId: row.targetId,
    overwrittenRevision: evidence.failure.currentRevision,
    finalRevision: receipt.revision ?? null,
    lineageLength: evidence.lineage.length,
    copy: {
      local: evidence.copy.local,
      base: 'absent',
      remote:
        'snapshot' in remote ? 'snapshot' : 'revisionOnly' in remote ? 'revision_only' : 'absent',
    },
    recordedAt: evidence.recordedAt,
    settledAt: receipt.settledAt,
    kind: row.kind,
    // Evidence written before §10.1 has no reference: nothing is known to be kept.
    historyRef: evidence.historyRef ?? null,
  };
}

/**
 * A ledger entry as the app reads it (§10.1, §15): the server keeps what a resend overwrote only
 * as long as its ledger, so an entry says when that copy is forgotten and whether it is. Counted
 * from `recordedAt` (the conflict answer, before the resend overwrote anything), so an entry
 * says "expired" a little early rather than look restorable once the copy is gone; `restore`
 * still asks the server, which has the last word (`history_unavailable`).
 */
export function withHistoryExpiry(
  entry: ConflictLedgerEntry,
  ctx: { now: number; retentionMs: number | undefined },
): ConflictLedgerEntry {
  if (!entry.historyRef) return entry;
  const historyExpiresAt = entry.recordedAt + (ctx.retentionMs ?? ASSUMED_RETENTION_MS);
  return { ...entry, historyExpiresAt, historyExpired: ctx.now >= historyExpiresAt };
}
