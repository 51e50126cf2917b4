import type { ConflictEvidence } from '../model/conflict-evidence.ts';
import type { OutboxRow } from '../model/row.ts';
import type { ConflictLedgerEntry, Receipt, ReplacePlan } from '../model/store.ts';
import { ASSUMED_RETENTION_MS } from './key-retention.ts';

/**
 * The ledger entry of a row carrying conflict evidence, or undefined for other rows (§10, G5).
 * With the receipt of its success it is settled. Without, it is the entry written with the
 * resend itself, before it can be sent (`unsettled`): whoever then sends and removes the row — a
 * legacy tab writes no ledger (§17) — and whatever the app does with it later, the overwrite
 * keeps its entry, and the ACK completes it by successor id.
 */
export function ledgerEntryFor(row: OutboxRow, receipt?: Receipt): ConflictLedgerEntry | undefined {
  const evidence = row.conflict as ConflictEvidence | undefined;
  if (evidence?.version !== 1) return undefined;
  // The codec checks only `version` of evidence: a value missing the rest still gets its entry,
  // never stops an enqueue or an ACK (G7).
  const remote = evidence.copy?.remote ?? {};
  return {
    successorId: row.id,
    originalId: evidence.predecessor?.requestId,
    owner: row.owner,
    collection: row.collection,
    targetId: row.targetId,
    overwrittenRevision: evidence.failure?.currentRevision ?? null,
    finalRevision: receipt?.revision ?? null,
    lineageLength: evidence.lineage?.length ?? 0,
    copy: {
      local: evidence.copy?.local,
      base: 'absent',
      remote:
        'snapshot' in remote ? 'snapshot' : 'revisionOnly' in remote ? 'revision_only' : 'absent',
    },
    recordedAt: evidence.recordedAt,
    settledAt: receipt?.settledAt ?? evidence.recordedAt,
    kind: row.kind,
    // Evidence written before §10.1 has no reference: nothing is known to be kept.
    historyRef: evidence.historyRef ?? null,
    ...(receipt ? {} : { unsettled: true as const }),
  };
}

/**
 * The ledger writes of a plan (§10, G5: exactly one entry per overwrite): an unsettled entry for
 * each row of `mayApply` that carries evidence — a resend written now, or one leaving the outbox
 * that may have been applied — and none left for the rows of `appliedNothing`, whose requests
 * are known never to have been applied: met by a 412, merged or cancelled before they could
 * be, discarded after answers that said so. Their evidence goes on with the row that replaces
 * them, if any, and its own entry.
 */
export function ledgerChanges(
  appliedNothing: readonly OutboxRow[],
  mayApply: readonly OutboxRow[] = [],
): Pick<ReplacePlan, 'ledger' | 'ledgerDelete'> {
  const ledger = mayApply.flatMap((row) => ledgerEntryFor(row) ?? []);
  const ledgerDelete = appliedNothing.flatMap((row) => (row.conflict ? [row.id] : []));
  return {
    ...(ledger.length ? { ledger } : {}),
    ...(ledgerDelete.length ? { ledgerDelete } : {}),
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
