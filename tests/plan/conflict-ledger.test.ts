import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import type { ConflictLedgerEntry, ReplacePlan } from '../../shared/model/store.ts';
import {
  ledgerChanges,
  ledgerEntryFor,
  withHistoryExpiry,
} from '../../shared/plan/conflict-ledger.ts';
import { planConflictSuccessor } from '../../shared/plan/conflict-successor.ts';
import { planEnqueue } from '../../shared/plan/enqueue.ts';
import type { NewIntent } from '../../shared/plan/enqueue-types.ts';
import { planDiscard } from '../../shared/plan/manual-actions.ts';
import {
  claimedBy,
  createRow,
  deferred,
  LEASE,
  ME,
  NOW,
  notes,
  OWNER,
  observe,
  receiptOf,
  unanswered,
  updateRow,
  without,
} from './fixtures.ts';

const DAY = 24 * 60 * 60 * 1000;

const entry: ConflictLedgerEntry = {
  successorId: 'notes-s',
  originalId: 'notes-o',
  owner: 'user-1',
  collection: 'notes',
  targetId: 'n_1',
  overwrittenRevision: 2,
  finalRevision: 3,
  lineageLength: 0,
  copy: { local: 'present', base: 'absent', remote: 'snapshot' },
  recordedAt: 1_000,
  settledAt: 2_000,
  historyRef: {
    kind: 'record_history',
    collection: 'notes',
    recordId: 'n_1',
    supersededRevision: 2,
    access: 'server_lookup',
  },
};

/** SPEC §10.1, §15: an entry says when the server forgets what its resend overwrote. */
describe('withHistoryExpiry', () => {
  it.each([
    {
      case: 'a day after, with nothing published (7 days assumed)',
      now: 1_000 + DAY,
      retention: undefined,
      expiresAt: 1_000 + 7 * DAY,
      expired: false,
    },
    {
      case: 'eight days after, with nothing published',
      now: 1_000 + 8 * DAY,
      retention: undefined,
      expiresAt: 1_000 + 7 * DAY,
      expired: true,
    },
    {
      case: 'eight days after, where the server keeps 30 days',
      now: 1_000 + 8 * DAY,
      retention: 30 * DAY,
      expiresAt: 1_000 + 30 * DAY,
      expired: false,
    },
    {
      case: 'at the very end of the retention',
      now: 1_000 + 7 * DAY,
      retention: 7 * DAY,
      expiresAt: 1_000 + 7 * DAY,
      expired: true,
    },
  ])('$case', ({ now, retention, expiresAt, expired }) => {
    expect(withHistoryExpiry(entry, { now, retentionMs: retention })).toEqual({
      ...entry,
      historyExpiresAt: expiresAt,
      historyExpired: expired,
    });
  });

  it('leaves an entry whose server keeps no history as it is', () => {
    const none = { ...entry, historyRef: null };
    expect(withHistoryExpiry(none, { now: 10 * DAY, retentionMs: undefined })).toBe(none);
  });
});

/** A conflict successor as the planner writes it: the sent row met revision `current` (§10). */
function successorOf(row: OutboxRow, id: string, current = 7): OutboxRow {
  const planned = planConflictSuccessor(
    row,
    structuredClone(row),
    { currentRevision: current },
    412,
    {
      owner: OWNER,
      holderId: ME,
      fence: 1,
      now: NOW,
      successorId: id,
      handler: notes,
    },
  );
  if (planned.kind !== 'successor') throw new Error(`expected a successor, got ${planned.kind}`);
  return planned.successor;
}

const S1 = 'notes-0000000000000000000000s1';
const S2 = 'notes-0000000000000000000000s2';
const NEW_ID = 'notes-00000000000000000000new1';
const s1 = successorOf(claimedBy(updateRow(), ME, 1), S1);
const sent = (row: OutboxRow) => claimedBy(row, ME, 1);
const blocked = (row: OutboxRow, code: string): OutboxRow => ({
  ...(code === 'handler_failed' ? unanswered(row, code) : deferred(row)),
  state: 'blocked',
  blockedAt: NOW,
  blockedCode: code,
  evidence: {
    attemptCount: 1,
    lastErrorCode: code,
    ...(code === 'handler_failed' ? { mayHaveApplied: true } : {}),
  },
});
const enqueueCtx = { owner: OWNER, now: NOW, leaseMs: LEASE, maxRowBytes: 4096, handler: notes };

function planOf(case_: () => ReplacePlan | undefined): ReplacePlan {
  const plan = case_();
  if (plan === undefined) throw new Error('no plan');
  return plan;
}

function conflict(row: OutboxRow, policy?: 'block'): ReplacePlan {
  const planned = planConflictSuccessor(row, structuredClone(row), { currentRevision: 9 }, 412, {
    owner: OWNER,
    holderId: ME,
    fence: 1,
    now: NOW,
    successorId: S2,
    handler: policy ? { ...notes, conflict: policy } : notes,
  });
  if (planned.kind === 'stale') throw new Error('stale');
  return planned.plan;
}

function discard(row: OutboxRow): ReplacePlan {
  const planned = planDiscard(observe(row), [], { owner: OWNER, now: NOW });
  if (planned.kind !== 'apply') throw new Error(planned.code);
  return planned.plan;
}

function enqueue(intent: Partial<NewIntent>, record: OutboxRow[]): ReplacePlan {
  const planned = planEnqueue(
    {
      id: NEW_ID,
      collection: 'notes',
      kind: 'update',
      targetId: 'n_1',
      payload: { body: 'b' },
      ...intent,
    },
    record.map(observe),
    undefined,
    enqueueCtx,
  );
  if (planned.kind !== 'write') throw new Error(planned.kind);
  return planned.plan;
}

/**
 * SPEC §10, §20 G5: every overwrite has exactly one ledger entry. It is written with the resend,
 * before any sender can send and remove it, and goes only when the resend is known never to
 * have been applied.
 */
describe('the ledger entry written with the resend (G5)', () => {
  it('is unsettled until its ACK: no final revision, its time the evidence time', () => {
    expect(ledgerEntryFor(s1)).toEqual({
      successorId: S1,
      originalId: 'notes-000000000000000000000001',
      owner: OWNER,
      collection: 'notes',
      targetId: 'n_1',
      overwrittenRevision: 7,
      finalRevision: null,
      lineageLength: 0,
      copy: { local: 'present', base: 'absent', remote: 'revision_only' },
      recordedAt: NOW,
      settledAt: NOW,
      kind: 'update',
      historyRef: null,
      unsettled: true,
    });
  });

  it('is completed by the receipt of its success, under the same successor id', () => {
    const settled = ledgerEntryFor(s1, { ...receiptOf(s1, 'n_1', 8), settledAt: NOW + 5 });
    expect(settled).toEqual({
      ...without(ledgerEntryFor(s1)!, 'unsettled'),
      finalRevision: 8,
      settledAt: NOW + 5,
    });
  });

  it('is none for a row without conflict evidence', () => {
    expect(ledgerEntryFor(updateRow())).toBeUndefined();
    expect(ledgerChanges([updateRow()], [updateRow()])).toEqual({});
  });

  it.each([
    {
      rule: 'a conflict successor is written with its entry',
      plan: () => conflict(sent(updateRow())),
      ledger: [S2],
      deleted: undefined,
    },
    {
      rule: 'a successor that meets a conflict again applied nothing: its entry goes, the next one carries the lineage',
      plan: () => conflict(sent(s1)),
      ledger: [S2],
      deleted: [S1],
    },
    {
      rule: 'a successor re-issued past the server’s retention keeps its entry: its old key may have been applied',
      plan: () =>
        conflict({
          ...sent(s1),
          request: { ...s1.request!, requestId: 'notes-00000000000000000reissued' },
          evidence: { attemptCount: 1, mayHaveApplied: true },
        }),
      ledger: [S2],
      deleted: undefined,
    },
    {
      rule: 'a successor blocked by the block policy applied nothing: its entry goes',
      plan: () => conflict(sent(s1), 'block'),
      ledger: undefined,
      deleted: [S1],
    },
    {
      rule: 'a successor discarded after its answer could not be read (handler_failed) keeps its entry',
      plan: () => discard(blocked(s1, 'handler_failed')),
      ledger: [S1],
      deleted: undefined,
    },
    {
      rule: 'a successor discarded after a rejection that applied nothing (http_422) takes its entry along',
      plan: () => discard(blocked(s1, 'http_422')),
      ledger: undefined,
      deleted: [S1],
    },
    {
      rule: 'a discard of a row without evidence touches no entry',
      plan: () => discard(blocked(updateRow(), 'handler_failed')),
      ledger: undefined,
      deleted: undefined,
    },
    {
      rule: 'a successor never sent, merged into a later edit: the merged row carries the evidence and the entry',
      plan: () => enqueue({}, [s1]),
      ledger: [NEW_ID],
      deleted: [S1],
    },
    {
      rule: 'a successor answered 503, merged into a later edit: the same',
      plan: () => enqueue({}, [deferred(s1)]),
      ledger: [NEW_ID],
      deleted: [S1],
    },
    {
      rule: 'a successor whose answer is unknown is not merged: its entry stays as it is',
      plan: () => enqueue({}, [unanswered(s1)]),
      ledger: undefined,
      deleted: undefined,
    },
    {
      rule: 'a create’s successor never sent, cancelled by a delete of its record: its entry goes',
      plan: () =>
        enqueue({ kind: 'delete', targetId: 'n_5', payload: undefined }, [
          successorOf(claimedBy(createRow({ id: 'notes-c', targetId: 'n_5' }), ME, 1), S1),
        ]),
      ledger: undefined,
      deleted: [S1],
    },
  ])('$rule', ({ plan, ledger, deleted }) => {
    const planned = planOf(plan);
    expect(planned.ledger?.map((e) => e.successorId)).toEqual(ledger);
    for (const entry of planned.ledger ?? []) expect(entry.unsettled).toBe(true);
    expect(planned.ledgerDelete).toEqual(deleted);
  });
});
