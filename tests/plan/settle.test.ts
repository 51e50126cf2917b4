import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import type { ReplacePlan } from '../../shared/model/store.ts';
import { planClaim } from '../../shared/plan/claim.ts';
import { planConflictSuccessor } from '../../shared/plan/conflict-successor.ts';
import {
  planSettleFailure,
  planSettleSuccess,
  type SettleContext,
} from '../../shared/plan/settle.ts';
import {
  BUNDLE,
  claimedBy,
  intentRow,
  LEASE,
  ME,
  NOW,
  notes,
  OTHER,
  OWNER,
  receiptOf,
  updateRow,
  without,
} from './fixtures.ts';

const FENCE = 2;
const RETRY_AT = NOW + 4_000;
const ctx: SettleContext = {
  owner: OWNER,
  holderId: ME,
  fence: FENCE,
  now: NOW,
  nextAttemptAt: RETRY_AT,
};

/** The row as this holder claimed it with fence 2 (attempt 2), its lease now over. */
const mine = claimedBy(updateRow({ unknownField: 'kept' }), ME, FENCE, NOW - 3_000);

type Settled = { kind: 'apply'; plan: ReplacePlan } | { kind: 'not_mine' | 'stale' };

/** Every §5 outcome, planned against an observed row (or none). */
const OUTCOMES: { outcome: string; settle: (observed: OutboxRow | undefined) => Settled }[] = [
  {
    outcome: 'success',
    settle: (observed) =>
      planSettleSuccess(observed, structuredClone(observed), receiptOf(mine, 'n_1', 4), ctx),
  },
  {
    outcome: 'transient failure',
    settle: (observed) =>
      planSettleFailure(
        observed,
        structuredClone(observed),
        { kind: 'transient', code: 'http_503' },
        ctx,
      ),
  },
  {
    outcome: 'auth expired',
    settle: (observed) =>
      planSettleFailure(
        observed,
        structuredClone(observed),
        { kind: 'auth', code: 'http_401' },
        ctx,
      ),
  },
  {
    outcome: 'permanent rejection',
    settle: (observed) =>
      planSettleFailure(
        observed,
        structuredClone(observed),
        { kind: 'permanent', code: 'http_422', detail: '{"type":"validation-failed"}' },
        ctx,
      ),
  },
  {
    outcome: 'revision conflict',
    settle: (observed) => {
      const planned = planConflictSuccessor(
        observed,
        structuredClone(observed),
        { currentRevision: 7 },
        412,
        { ...ctx, successorId: 'notes-0000000000000000000000s1', handler: notes },
      );
      return planned.kind === 'stale' ? planned : { kind: 'apply', plan: planned.plan };
    },
  },
];

function applied(settled: Settled): ReplacePlan {
  if (settled.kind !== 'apply') throw new Error(`expected a plan, got ${settled.kind}`);
  return settled.plan;
}

function written(settled: Settled): OutboxRow {
  const row = applied(settled).put?.[0];
  if (row === undefined) throw new Error('the plan writes no row');
  return row as OutboxRow;
}

/** SPEC §5, column "row change": each outcome while the claim is still mine. */
describe('settling while the claim is mine (SPEC §5)', () => {
  const [success, transient, auth, permanent, conflict] = OUTCOMES.map((o) => o.settle);

  it('success deletes the row and writes its receipt in the same transaction', () => {
    const plan = applied(success!(mine));
    expect(plan.expected).toEqual([{ id: mine.id, row: mine }]);
    expect(plan.delete).toEqual([mine.id]);
    expect(plan.put).toEqual([]);
    expect(plan.receipts).toEqual([receiptOf(mine, 'n_1', 4)]);
  });

  it('success planned without reading the record bets the sent row is its only row, checked in the transaction', () => {
    const plan = applied(
      planSettleSuccess(mine, structuredClone(mine), receiptOf(mine), ctx, {
        expected: [],
        alone: true,
      }),
    );
    expect(plan.records).toEqual([
      { collection: mine.collection, targetId: mine.targetId, ids: [mine.id] },
    ]);
    expect(plan.delete).toEqual([mine.id]);
    expect(applied(success!(mine)).records).toBeUndefined();
  });

  it('success planned from a read of the record checks it still holds exactly the rows read (§5, §8)', () => {
    const ids = [mine.id, 'notes-0000000000000000000000w1'];
    const plan = applied(
      planSettleSuccess(mine, structuredClone(mine), receiptOf(mine), ctx, {
        expected: [],
        recordIds: ids,
      }),
    );
    expect(plan.records).toEqual([{ collection: mine.collection, targetId: mine.targetId, ids }]);
  });

  it('success commits the converted intents with the ACK, under strict durability (§8)', () => {
    const intent = intentRow('c1');
    const converted = { ...intent, id: 'notes-0000000000000000000000u2', targetId: 'n_77' };
    const plan = applied(
      planSettleSuccess(mine, structuredClone(mine), receiptOf(mine), ctx, {
        expected: [{ id: intent.id, row: intent }],
        put: [converted],
        delete: [intent.id],
      }),
    );
    expect(plan.expected.map((e) => e.id)).toEqual([mine.id, intent.id]);
    expect(plan.put).toEqual([converted]);
    expect(plan.delete).toEqual([mine.id, intent.id]);
    expect(plan.durability).toBe('strict');
  });

  it('a transient failure requeues the row for its backoff time with the claim expired', () => {
    const row = written(transient!(mine));
    expect(row).toMatchObject({
      state: 'queued',
      deferredAt: NOW,
      nextAttemptAt: RETRY_AT,
      claim: { holderId: ME, fence: FENCE, expiresAt: NOW },
      evidence: { attemptCount: FENCE, lastErrorCode: 'http_503' },
    });
    expect(row).not.toHaveProperty('sentAt');
  });

  it('auth expired holds the row with the claim expired', () => {
    const row = written(auth!(mine));
    expect(row).toMatchObject({
      state: 'held',
      heldAt: NOW,
      deferredAt: NOW,
      claim: { holderId: ME, fence: FENCE, expiresAt: NOW },
      evidence: { lastErrorCode: 'http_401' },
    });
    expect(row).not.toHaveProperty('sentAt');
  });

  it('a permanent rejection blocks the row with its code and detail, claim expired', () => {
    const row = written(permanent!(mine));
    expect(row).toMatchObject({
      state: 'blocked',
      blockedAt: NOW,
      blockedCode: 'http_422',
      blockedDetail: '{"type":"validation-failed"}',
      claim: { holderId: ME, fence: FENCE, expiresAt: NOW },
    });
    expect(row).not.toHaveProperty('sentAt');
  });

  it('a revision conflict replaces the row with a queued successor at the current revision (§10)', () => {
    const plan = applied(conflict!(mine));
    expect(plan.delete).toEqual([mine.id]);
    expect(plan.expected).toEqual([
      { id: mine.id, row: mine },
      { id: 'notes-0000000000000000000000s1', row: null },
    ]);
    const successor = plan.put?.[0] as OutboxRow;
    expect(successor).toMatchObject({
      id: 'notes-0000000000000000000000s1',
      state: 'queued',
      successorOf: mine.id,
      baseRevision: 7,
      savedAt: mine.savedAt,
      request: { requestId: 'notes-0000000000000000000000s1', headers: { 'if-match': '"7"' } },
    });
    expect(successor).not.toHaveProperty('claim');
    expect(plan.durability).toBe('strict');
  });

  it.each([
    { outcome: { kind: 'transient', code: 'network' }, unknown: true },
    { outcome: { kind: 'transient', code: 'timeout' }, unknown: true },
    { outcome: { kind: 'transient', code: 'http_500' }, unknown: true },
    { outcome: { kind: 'transient', code: 'http_502' }, unknown: true },
    { outcome: { kind: 'transient', code: 'http_504' }, unknown: true },
    { outcome: { kind: 'transient', code: 'request_in_progress' }, unknown: true },
    { outcome: { kind: 'permanent', code: 'handler_failed' }, unknown: true },
    { outcome: { kind: 'transient', code: 'http_503' }, unknown: false },
    { outcome: { kind: 'transient', code: 'http_429' }, unknown: false },
    { outcome: { kind: 'transient', code: 'lease_lapsed', device: true }, unknown: false },
    { outcome: { kind: 'auth', code: 'http_401' }, unknown: false },
    { outcome: { kind: 'auth', code: 'auth_required' }, unknown: false },
    { outcome: { kind: 'permanent', code: 'http_422' }, unknown: false },
  ] as const)(
    '$outcome.code marks the row as maybe applied: $unknown (§6: such a row is never merged)',
    ({ outcome, unknown }) => {
      const row = written(planSettleFailure(mine, structuredClone(mine), outcome, ctx));
      expect(row.evidence?.mayHaveApplied === true).toBe(unknown);
      // Once set, the mark stays through later answers that applied nothing.
      const requeued = { ...row, state: 'queued' };
      const again = planClaim(requeued, structuredClone(requeued), {
        owner: OWNER,
        holderId: ME,
        now: NOW,
        leaseMs: LEASE,
        bundle: BUNDLE,
      });
      if (again.kind !== 'claim') throw new Error('expected a claim');
      const later = written(
        planSettleFailure(
          again.row,
          structuredClone(again.row),
          { kind: 'transient', code: 'http_503' },
          { ...ctx, fence: again.fence },
        ),
      );
      expect(later.evidence?.mayHaveApplied === true).toBe(unknown);
    },
  );

  it('a conflict successor is a new request: an unknown outcome of the original is not its own', () => {
    const marked = { ...mine, evidence: { ...mine.evidence!, mayHaveApplied: true } };
    const successor = applied(conflict!(marked)).put?.[0] as OutboxRow;
    expect(successor.evidence).not.toHaveProperty('mayHaveApplied');
    expect(successor.evidence).toMatchObject({ lastErrorCode: 'revision_conflict' });
  });

  it.each(['transient failure', 'auth expired', 'permanent rejection'])(
    'after a %s the fence is kept, so the next claim takes the next number',
    (outcome) => {
      const settle = OUTCOMES.find((o) => o.outcome === outcome)!.settle;
      const row = written(settle(mine));
      const requeued = { ...row, state: 'queued' };
      const next = planClaim(requeued, structuredClone(requeued), {
        owner: OWNER,
        holderId: OTHER,
        now: NOW,
        leaseMs: LEASE,
        bundle: BUNDLE,
      });
      expect(next).toMatchObject({ kind: 'claim', fence: FENCE + 1 });
    },
  );
});

/** SPEC §5, last column: the claim is not mine → change nothing. */
/** SPEC §17: a legacy tab's send after this holder's claim makes the row the tab's (G2). */
describe('a failure is not settled once a legacy tab sent the row since the claim', () => {
  const claimed = planClaim(updateRow(), updateRow(), {
    owner: OWNER,
    holderId: ME,
    now: NOW,
    leaseMs: 10_000,
    bundle: 'sw-outbox@test',
  });
  if (claimed.kind !== 'claim') throw new Error('expected a claim');
  const failure = { kind: 'transient', code: 'http_503' } as const;
  const settle = (row: OutboxRow) =>
    planSettleFailure(row, row, failure, { ...ctx, fence: claimed.fence }).kind;

  it("the claim as it was written is this holder's to settle", () => {
    expect(settle(claimed.row)).toBe('apply');
  });

  it.each([
    { when: 'in the same millisecond as the claim', at: NOW },
    { when: 'a millisecond later', at: NOW + 1 },
  ])('a legacy send $when leaves it to the tab', ({ at }) => {
    // The v0 tab keeps every field it does not know and writes `sentAt` from `Date.now()`.
    expect(settle({ ...claimed.row, state: 'sending', sentAt: at })).toBe('not_mine');
  });
});

describe('settling when the claim is not mine changes nothing (SPEC §5)', () => {
  const NOT_MINE: { situation: string; observed: OutboxRow | undefined }[] = [
    { situation: 'the row is gone', observed: undefined },
    { situation: 'another holder took the row over', observed: claimedBy(mine, OTHER, FENCE + 1) },
    {
      situation: 'I claimed it again since, with a newer fence',
      observed: claimedBy(mine, ME, FENCE + 1),
    },
    {
      situation: 'an older fence of mine is what the row carries',
      observed: claimedBy(mine, ME, FENCE - 1),
    },
    {
      situation: 'the row has no claim (a legacy writer rewrote it)',
      observed: without(mine, 'claim'),
    },
  ];
  const cases = OUTCOMES.flatMap(({ outcome, settle }) =>
    NOT_MINE.map(({ situation, observed }) => ({ outcome, situation, settle, observed })),
  );

  it.each(cases)('$outcome when $situation plans no write', ({ outcome, settle, observed }) => {
    const result = settle(observed);
    expect(result).toEqual({ kind: outcome === 'revision conflict' ? 'stale' : 'not_mine' });
  });
});
