import type { ConflictEvidence } from '../model/conflict-evidence.ts';
import type { OutboxRow } from '../model/row.ts';
import type { ConflictLedgerEntry, Receipt } from '../model/store.ts';

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
