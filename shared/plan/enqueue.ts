import type { Observed, OutboxRow } from '../model/row.ts';
import { PENDING_PREFIX, pendingCreateId } from '../model/row.ts';
import { attemptOutcome } from './attempt-outcome.ts';
import { planIntentRow, planMergedRow, planRequestRow } from './enqueue-rows.ts';
import type {
  EnqueueContext,
  EnqueuePlan,
  NewIntent,
  PendingCreateFacts,
} from './enqueue-types.ts';
import { isRowInFlight, wasAttempted } from './in-flight.ts';
import { intentShapeIssues } from './intent-issues.ts';
import { inMadeOrder, placingUnsequenced, supersedes } from './made-order.ts';
import { isQuarantined } from './quarantine.ts';
import { holdsNothing } from './select.ts';
import { isUnknownVersion } from './unknown-version.ts';

/**
 * A record's rows in the order they were made (`seq`, §6.1), except that a row always comes
 * after its `successorOf` row (or the conflict successor standing for it). Legacy rows, ordered
 * by `savedAt`, need the links most: a successor saved in the same millisecond as its predecessor
 * (or under a clock that stepped back) may sort before it, and a merge folding them in that order
 * would apply the older edit over the newer (G4).
 */
function inLinkedOrder(rows: readonly Observed[]): Observed[] {
  const sorted = inMadeOrder(rows);
  const byId = new Map(sorted.map((observed) => [observed.row.id, observed]));
  for (const observed of sorted)
    for (const id of supersedes(observed.row)) if (!byId.has(id)) byId.set(id, observed);
  const placed = new Set<string>();
  const out: Observed[] = [];
  const place = (observed: Observed, path: Set<string>) => {
    const { id, successorOf } = observed.row;
    if (placed.has(id) || path.has(id)) return;
    path.add(id);
    const before = successorOf === undefined ? undefined : byId.get(successorOf);
    // A link into the rows without `seq` is a link to every one of them up to it: they go in
    // their writers' order.
    if (before !== undefined && before.row.seq === undefined)
      for (const legacy of sorted) {
        if (legacy === before) break;
        if (legacy.row.seq === undefined) place(legacy, path);
      }
    if (before !== undefined) place(before, path);
    placed.add(id);
    out.push(observed);
  };
  for (const observed of sorted) place(observed, new Set());
  return out;
}

/**
 * Plans one enqueue (SPEC §6, §8): a plain row; a successor of a row in flight; one merged row
 * replacing rows not in flight; both cancelled; an intent row for a create with no server id
 * yet; or a rejection. Every plan expects the new id absent, so a racing duplicate is `stale`.
 */
export function planEnqueue(
  intent: NewIntent,
  existing: Observed[],
  pending: PendingCreateFacts | undefined,
  ctx: EnqueueContext,
): EnqueuePlan {
  const planned = planAgainst(intent, existing, pending, ctx);
  const placed =
    planned.kind === 'write'
      ? { ...planned, plan: placingUnsequenced(planned.plan, existing, ctx) }
      : planned;
  return pending?.row === undefined ? placed : expectingCreate(placed, pending.row);
}

/**
 * An edit of a pending create is planned from the create as it was read, and that read is not
 * the read of the record: the plan holds only while the create is still that row (§6, §8).
 * Otherwise an edit planned on a create that another holder merged away in between commits as
 * an intent of a create that is gone, waiting on it for good (G1).
 */
function expectingCreate(planned: EnqueuePlan, create: Observed): EnqueuePlan {
  if (planned.kind !== 'write') return planned;
  const expected = [...planned.plan.expected, { id: create.row.id, row: create.raw }];
  return { ...planned, plan: { ...planned.plan, expected } };
}

function planAgainst(
  intent: NewIntent,
  existing: Observed[],
  pending: PendingCreateFacts | undefined,
  ctx: EnqueueContext,
): EnqueuePlan {
  const isCreate = intent.kind === 'create';
  const issues = intentShapeIssues(intent, ctx.handler);
  if (issues.length > 0) {
    return {
      kind: 'reject',
      code: 'invalid_intent',
      message: `Invalid enqueue input: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues,
    };
  }
  const targetId = intent.targetId ?? `${PENDING_PREFIX}${intent.id}`;
  const createId = isCreate ? undefined : pendingCreateId(targetId);
  const fresh = { ...intent, targetId };
  const chain = inLinkedOrder(existing);

  if (chain.some(({ row }) => row.kind === 'delete')) {
    return {
      kind: 'reject',
      code: 'target_deleted',
      message: `${targetId} has a delete queued; it cannot be edited.`,
    };
  }

  if (createId !== undefined) {
    const create = pending?.row;
    if (create === undefined) {
      // The record's name, else the receipt that named it (§6.1, §8).
      const settled = pending?.name ?? pending?.receipt;
      if (settled?.serverId !== undefined) {
        return {
          kind: 'retarget',
          targetId: settled.serverId,
          baseRevision: settled.revision ?? null,
        };
      }
      if (pending?.tombstone !== undefined && pending.tombstone.reason !== 'converted') {
        return {
          kind: 'reject',
          code: 'target_deleted',
          message: `The create ${createId} was ${pending.tombstone.reason}.`,
        };
      }
      // The create vanished without a receipt we know of: an intent, recovered at flush (§8).
      // Its record is unknown until then, so an edit of the server id made since the last
      // intent may be of it: the new edit follows that intent with its own `seq`, never folded
      // into the intent's older place (§6.1).
      return planIntentRow(fresh, pending?.id ?? createId, chain, ctx, { fold: false });
    }
    // A create that may have been applied is never merged nor cancelled (§6): the edit waits
    // on its receipt as an intent (§8). So too when a row after it must stay as it is.
    const { open } = openRows(chain, ctx);
    if (open[0]?.row.id !== create.row.id) return planIntentRow(fresh, create.row.id, chain, ctx);
  }

  // The rows the new edit may fold into (for a never-sent create, its intents fold in too);
  // the rows before them stay as they are and the new edit goes after them.
  // An edit whose request already left (§22) is never folded into another: its key is its own.
  const { open, before } =
    fresh.evidence === undefined ? openRows(chain, ctx) : { open: [], before: chain };
  const predecessor = predecessorAmong(before, ctx);
  if (open.length > 0) return planMergedRow(fresh, open, chain, ctx, predecessor?.row.id);
  return planRequestRow(
    fresh,
    { savedAt: ctx.now, successorOf: predecessor?.row.id },
    chain,
    [],
    ctx,
    predecessor ? 'successor' : 'queued',
  );
}

/**
 * Whether a row may be merged into a new edit or cancelled by it (SPEC §6): not in flight, never
 * sent or known to have applied nothing, not a quarantined value and not of a format version
 * this bundle does not know. A row that may have been applied stays, and the new edit becomes
 * its successor (G2); so does a quarantined one, whose raw value must outlive every edit after
 * it (G7), a newer bundle's row, which that bundle sends (§17), and a blocked row a newer edit
 * already overtook (`overtakenBy`), whose older fields would land over that edit (G4).
 */
function mayMerge(row: OutboxRow, ctx: EnqueueContext): boolean {
  return (
    !isQuarantined(row) &&
    row.overtakenBy === undefined &&
    !isUnknownVersion(row) &&
    !isRowInFlight(row, ctx.now, ctx.leaseMs) &&
    attemptOutcome(row) !== 'unknown'
  );
}

/**
 * Splits a record's rows (in queue order) into the trailing ones a new edit may merge with and
 * the ones before them (SPEC §6, G2, G4). A merged row takes the place of the oldest row it
 * absorbs, so nothing may sit between that place and the new edit that must go first: the open
 * rows end the queue, each may merge, and none follows an edit that already left the record
 * (its `successorOf` row is gone — settled — so what was queued before it must not come back
 * over it).
 */
function openRows(
  chain: Observed[],
  ctx: EnqueueContext,
): { open: Observed[]; before: Observed[] } {
  const ids = new Set(chain.flatMap(({ row }) => [row.id, ...supersedes(row)]));
  // A blocked row does not hold its record (§7): a row of it in flight went past it, and what
  // the blocked row carries would land over that newer edit if merged — what its ACK marks
  // (`overtakenBy`) before it is settled (G4). So too a row sent before and retried behind an
  // edit that is in flight or may have been applied (its answer lost, no ACK yet to mark
  // anything): alone it meets the revision check; merged into a new row, that row would follow
  // the edit and be rebased on its receipt (§6), and land over it unchecked.
  const inFlight = new Set(
    chain.flatMap(({ row }) => (isRowInFlight(row, ctx.now, ctx.leaseMs) ? [row.id] : [])),
  );
  const unsettled = (row: OutboxRow) =>
    inFlight.has(row.id) || (wasAttempted(row) && attemptOutcome(row) === 'unknown');
  const passed = (row: OutboxRow, at: number) =>
    (inFlight.size > 0 && row.state === 'blocked') ||
    (wasAttempted(row) && chain.slice(0, at).some((earlier) => unsettled(earlier.row)));
  let start = chain.length;
  while (start > 0) {
    const candidate = chain[start - 1]!;
    if (!mayMerge(candidate.row, ctx) || passed(candidate.row, start - 1)) break;
    const link = chain[start]?.row.successorOf;
    if (link !== undefined && !ids.has(link)) break;
    start--;
  }
  // A merged row takes the smallest `seq` of the rows it folds (§6.1) and goes before every row
  // of the record made after that one. So none left out may hold its place after the first row
  // folded: a link that no longer says the order (an intent's, after the row it followed was
  // retried) would let the new edit go ahead of an edit made before it (G4).
  const placeOf = ({ row }: Observed) => (holdsNothing(row) ? -1 : (row.seq ?? -1));
  let held = Math.max(-1, ...chain.slice(0, start).map(placeOf));
  while (chain.slice(start).some(({ row }) => row.seq !== undefined && row.seq < held))
    held = Math.max(held, placeOf(chain[start++]!));
  // A row without `seq` this bundle writes (a legacy tab's) left out of the merge was committed
  // after every row given one (§6.1), whatever its writer's clock says: a merged row in an older
  // row's place would go before it, carrying an edit made after it. Nothing merges then; the
  // new row takes a fresh `seq` and the legacy rows their places before it.
  if (chain.slice(0, start).some(({ row }) => row.seq === undefined && !isUnknownVersion(row)))
    return { open: [], before: chain };
  return { open: chain.slice(start), before: chain.slice(0, start) };
}

/**
 * The row a new edit goes after: the last of `before` that still holds its successors (not
 * blocked nor of a newer format, §6, §7) — among rows in flight the one made last (by `seq`,
 * §6.1; never the one sent last: two holders' `sentAt` are readings of two clocks) — else the
 * last that holds nothing, whose link is kept but does not hold.
 */
function predecessorAmong(before: Observed[], ctx: EnqueueContext): Observed | undefined {
  const holding = before.filter(({ row }) => !holdsNothing(row));
  const last = holding[holding.length - 1] ?? before[before.length - 1];
  if (last === undefined || !isRowInFlight(last.row, ctx.now, ctx.leaseMs)) return last;
  const inFlight = before.filter(({ row }) => isRowInFlight(row, ctx.now, ctx.leaseMs));
  return inMadeOrder(inFlight).at(-1);
}
