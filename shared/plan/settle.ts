import type { Outcome } from '../model/outcome.ts';
import { mayHaveOtherNames } from '../model/pending.ts';
import { type OutboxRow, pendingCreateId } from '../model/row.ts';
import type { Receipt, ReplacePlan } from '../model/store.ts';
import { appliedNothing } from './attempt-outcome.ts';
import { isClaimMine, sentByLegacySinceClaim } from './claim.ts';

/** Who is settling, with which claim (SPEC §5). */
export interface SettleContext {
  owner: string;
  holderId: string;
  fence: number;
  now: number;
  /** When to try again after a transient failure (computed by the caller from backoff). */
  nextAttemptAt: number;
}

/** A settle to commit, or nothing because the claim is no longer this holder's. */
export type SettlePlan =
  | { kind: 'apply'; plan: ReplacePlan }
  /** The claim is not mine any more: change nothing (G3). */
  | { kind: 'not_mine' };

type NonSuccess = Exclude<Outcome, { kind: 'success' } | { kind: 'conflict' }>;

/** The claim, expired but with its fence kept: removing it would restart fences at 1 (§5). */
function expireClaim(row: OutboxRow, now: number): OutboxRow['claim'] {
  return row.claim === undefined ? undefined : { ...row.claim, expiresAt: now };
}

/**
 * Plans the row change for a non-success outcome: only while the claim is still mine, re-read
 * inside the transaction through `expected` (SPEC §5 table).
 */
export function planSettleFailure(
  current: OutboxRow | undefined,
  raw: unknown,
  outcome: NonSuccess,
  ctx: SettleContext,
): SettlePlan {
  if (!isClaimMine(current, ctx.holderId, ctx.fence)) return { kind: 'not_mine' };
  // A legacy tab's copy of the request went out after this claim: the row is the tab's now, and
  // requeueing it would drop the one mark that its outcome is unknown (§6, §17).
  if (sentByLegacySinceClaim(current)) return { kind: 'not_mine' };
  const { sentAt: _sent, ...rest } = current;
  const claim = expireClaim(current, ctx.now);
  const evidence = {
    ...current.evidence,
    attemptCount: current.evidence?.attemptCount ?? 1,
    lastErrorCode: outcome.code,
    // An answer that may follow an effect marks the row for good: it is never merged (§6).
    ...(appliedNothing(outcome.code) ? {} : { mayHaveApplied: true }),
  };
  let row: OutboxRow;
  switch (outcome.kind) {
    case 'transient':
      row = {
        ...rest,
        state: 'queued',
        deferredAt: ctx.now,
        nextAttemptAt: ctx.nextAttemptAt,
        claim,
        evidence,
      };
      break;
    case 'auth':
      row = { ...rest, state: 'held', heldAt: ctx.now, deferredAt: ctx.now, claim, evidence };
      break;
    case 'permanent':
      row = {
        ...rest,
        state: 'blocked',
        blockedAt: ctx.now,
        blockedCode: outcome.code,
        ...(outcome.detail === undefined ? {} : { blockedDetail: outcome.detail }),
        claim,
        evidence,
      };
      break;
  }
  return {
    kind: 'apply',
    plan: {
      owner: ctx.owner,
      expected: [{ id: current.id, row: raw }],
      put: [row],
      reason: 'settle',
    },
  };
}

/**
 * Plans the success ACK: delete the row and write its receipt in one transaction, only while
 * the claim is mine. `extra` carries the intent conversions that must commit with it (§8).
 */
export function planSettleSuccess(
  current: OutboxRow | undefined,
  raw: unknown,
  receipt: Receipt,
  ctx: Omit<SettleContext, 'nextAttemptAt'>,
  extra: Pick<ReplacePlan, 'expected' | 'put' | 'delete' | 'tombstones' | 'ledger'> & {
    /**
     * Planned without reading the record: bet that the sent row is its only row (no intent to
     * convert, no successor to rebase) and let the transaction check it; stale otherwise.
     */
    alone?: boolean;
    /**
     * Planned from a read of the record: the ids of its rows then. The transaction checks the
     * record still holds exactly those, so a row written meanwhile is never left behind.
     */
    recordIds?: string[];
  } = { expected: [] },
): SettlePlan {
  if (!isClaimMine(current, ctx.holderId, ctx.fence)) return { kind: 'not_mine' };
  const converting = (extra.put?.length ?? 0) > 0;
  const record = { collection: current.collection, targetId: current.targetId };
  return {
    kind: 'apply',
    plan: {
      owner: ctx.owner,
      expected: [{ id: current.id, row: raw }, ...extra.expected],
      put: extra.put ?? [],
      delete: [current.id, ...(extra.delete ?? [])],
      receipts: [receipt],
      tombstones: extra.tombstones ?? [],
      ledger: extra.ledger ?? [],
      ...namesOf(current, receipt),
      ...(extra.alone
        ? { records: [{ ...record, ids: [current.id] }] }
        : extra.recordIds !== undefined
          ? { records: [{ ...record, ids: extra.recordIds }] }
          : {}),
      // Converted intents replace user intent, so they need the strict guarantee (§3).
      durability: converting ? 'strict' : 'default',
      reason: 'settle',
    },
  };
}

/**
 * The name a create's success gives its record (§6.1): `pending:<C>` is the server id from now
 * on, written with the ACK and kept apart from the receipt, which is pruned sooner.
 */
export function namesOf(row: OutboxRow, receipt: Receipt): Pick<ReplacePlan, 'names'> {
  if (row.kind !== 'create' || receipt.serverId === undefined) return {};
  if (pendingCreateId(row.targetId) === undefined) return {};
  // A name points only at a server id (§6.1): a receipt an earlier bundle stored with a server id
  // that reads as a pending target gives the record no second name.
  if (!mayHaveOtherNames(receipt.serverId)) return {};
  return {
    names: [
      {
        owner: row.owner,
        collection: row.collection,
        pendingId: row.targetId,
        serverId: receipt.serverId,
        revision: receipt.revision,
        settledAt: receipt.settledAt,
      },
    ],
  };
}
