import type { ConflictEvidence } from '../model/conflict-evidence.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { isRowInFlight } from './in-flight.ts';
import { isQuarantined } from './quarantine.ts';
import { isUnknownVersion } from './unknown-version.ts';

/**
 * Rows in the order their edits were made (SPEC §6.1): by `seq`, the order in which the store
 * committed them, never by a clock reading. Rows without `seq` (a legacy v0 tab's, an older
 * bundle's) come after them, by their writers' `savedAt`, then id — the legacy order, which is
 * all such rows have among themselves: one that a row with `seq` does not link to was committed
 * after it (an edit whose transaction saw it links to it or merges it). Links say the rest.
 */
export function inMadeOrder<T extends { row: Pick<OutboxRow, 'seq' | 'savedAt' | 'id'> }>(
  rows: readonly T[],
): T[] {
  return [...rows].sort(({ row: a }, { row: b }) => {
    if (a.seq !== undefined && b.seq !== undefined) return a.seq - b.seq;
    if (a.seq !== undefined || b.seq !== undefined) return a.seq !== undefined ? -1 : 1;
    return a.savedAt - b.savedAt || (a.id < b.id ? -1 : 1);
  });
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
  // By the ids the rows were written under, which links name: a row re-issued under a new key
  // (§15) keeps its own.
  return steps.flatMap((step) =>
    [step?.requestId, step?.rowId].filter((id): id is string => typeof id === 'string'),
  );
}

/**
 * Places the rows of a record that have no `seq` yet (SPEC §6.1): a plan that reads the record
 * and gives a row a fresh `seq` first gives one to each of them, in their writers' order, in the
 * same transaction — they were committed before it, so they take their places before it. A row
 * without `seq` is then only ever one committed after the record's last such plan, and ordering
 * rows without `seq` after those with one is their commit order, whatever links later settle
 * away. A row in flight cannot be written, so neither it nor any row after it is placed (placed,
 * a later one would go before it should it come back); nor is any while a row with `seq` links
 * into one of them (placed, they would go after that row by `seq` while its link pulls the one
 * it names ahead of the others). The plan's new rows follow the last row left unplaced instead.
 * Rows the plan deletes or writes itself, rows of a newer format (not this bundle's to write) and
 * quarantined values (rewritten by `retry` and `discard` only, G7) are left as they are.
 */
export function placingUnsequenced(
  plan: ReplacePlan,
  record: readonly Observed[],
  ctx: { now: number; leaseMs: number },
): ReplacePlan {
  if (plan.seq === undefined || plan.seq.length === 0) return plan;
  const touched = new Set<unknown>([
    ...(plan.delete ?? []),
    ...(plan.put ?? []).map((row) => (row as { id?: unknown }).id),
  ]);
  const unsequenced = inMadeOrder(
    record.filter(
      ({ row }) =>
        row.seq === undefined &&
        !touched.has(row.id) &&
        !isUnknownVersion(row) &&
        !isQuarantined(row),
    ),
  );
  const fresh = new Set(plan.seq);
  // A row with `seq` that links into them was written while they could not be placed, and goes
  // after the one it names. Placed now, that one and the rows before it would go after it by
  // `seq` while its link pulls the one it names ahead of the others; and a row placed after them
  // would overtake them once the linking row holds nothing. So none of them is placed: they wait
  // in their writers' order, as while one of them is in flight.
  const linked = record.some(
    ({ row }) =>
      row.seq !== undefined &&
      !fresh.has(row.id) &&
      !touched.has(row.id) &&
      unsequenced.some((u) => u.row.id === row.successorOf),
  );
  const stop = linked
    ? 0
    : unsequenced.findIndex(({ row }) => isRowInFlight(row, ctx.now, ctx.leaseMs));
  const placed = stop < 0 ? unsequenced : unsequenced.slice(0, stop);
  const unplaced = stop < 0 ? [] : unsequenced.slice(stop);
  // The plan's new rows follow the last unplaced one that holds its successors (a blocked one
  // holds nothing, §7): a link is all that orders them after rows without `seq`, whatever
  // becomes of the row that linked into those before.
  const last = unplaced.filter(({ row }) => row.state !== 'blocked').at(-1);
  if (placed.length === 0 && last === undefined) return plan;
  const expected = new Set(plan.expected.map(({ id }) => id));
  return {
    ...plan,
    expected: [
      ...plan.expected,
      ...[...placed, ...(last ? [last] : [])]
        .filter(({ row }) => !expected.has(row.id))
        .map(({ row, raw }) => ({ id: row.id, row: raw })),
    ],
    put: [
      ...(plan.put ?? []).map((value) => {
        const row = value as OutboxRow;
        return last !== undefined && fresh.has(row.id) ? { ...row, successorOf: last.row.id } : row;
      }),
      ...placed.map(({ raw }) => raw),
    ],
    seq: [...placed.map(({ row }) => row.id), ...plan.seq],
  };
}
