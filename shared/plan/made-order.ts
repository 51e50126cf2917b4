import type { ConflictEvidence } from '../model/conflict-evidence.ts';
import type { OutboxRow } from '../model/row.ts';

/**
 * Rows in the order their edits were made (SPEC §6.1): by `seq`, the order in which the store
 * committed them, never by a clock reading. A row without `seq` (a legacy v0 tab's, an older
 * bundle's) has no known place among rows that have one: a set that holds one is ordered by its
 * writers' `savedAt`, then id — the legacy order, which is all such rows have among themselves.
 */
export function inMadeOrder<T extends { row: Pick<OutboxRow, 'seq' | 'savedAt' | 'id'> }>(
  rows: readonly T[],
): T[] {
  const bySeq = rows.every(({ row }) => row.seq !== undefined);
  return [...rows].sort(({ row: a }, { row: b }) =>
    bySeq ? a.seq! - b.seq! : a.savedAt - b.savedAt || (a.id < b.id ? -1 : 1),
  );
}

/**
 * The rows a conflict successor replaced (§10): the original and the intermediate resends of its
 * lineage, kept in its evidence. It stands for them: an edit made while the original was in
 * flight names the original as `successorOf` and goes after the resend — which keeps the
 * original's queue place under a new id, so queue order alone may put that edit first.
 */
export function supersedes(row: OutboxRow): string[] {
  // The codec checks only `conflict.version`: read the rest as what it may be.
  const evidence = row.conflict as Partial<ConflictEvidence> | undefined;
  if (evidence?.version !== 1) return [];
  const steps = [
    evidence.predecessor,
    ...(Array.isArray(evidence.lineage) ? evidence.lineage : []),
  ];
  return steps.flatMap((step) => (typeof step?.requestId === 'string' ? [step.requestId] : []));
}
