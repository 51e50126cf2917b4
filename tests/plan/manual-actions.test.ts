import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { buildConflictEvidence } from '../../shared/plan/conflict-successor.ts';
import { planEnqueue } from '../../shared/plan/enqueue.ts';
import { placingUnsequenced } from '../../shared/plan/made-order.ts';
import { planDiscard, planResumeHeld, planRetry } from '../../shared/plan/manual-actions.ts';
import { recordTurn } from '../../shared/plan/select.ts';
import {
  createRow,
  deferred,
  intentRow,
  LEASE,
  NOW,
  notes,
  OWNER,
  observe,
  updateRow,
} from './fixtures.ts';

const held = (code: string): OutboxRow => ({
  ...deferred(updateRow()),
  state: 'held',
  heldAt: NOW - 1_000,
  evidence: { attemptCount: 1, lastErrorCode: code },
});
const blocked = (code: string, row: OutboxRow = updateRow()): OutboxRow => ({
  ...deferred(row),
  state: 'blocked',
  blockedAt: NOW - 1_000,
  blockedCode: code,
  blockedDetail: 'why',
});

/** SPEC §13 `resumeHeld`: held rows go back to the queue; `only` picks rows held for one reason. */
describe('resuming held rows', () => {
  it.each([
    { rule: 'a held row is queued again', row: held('http_401'), only: undefined, resumed: true },
    {
      rule: 'with `only`, a row held for that reason is queued again',
      row: held('auth_required'),
      only: { code: 'auth_required' },
      resumed: true,
    },
    {
      rule: 'with `only`, a row held for another reason stays held',
      row: held('http_401'),
      only: { code: 'auth_required' },
      resumed: false,
    },
    { rule: 'a queued row is not touched', row: updateRow(), only: undefined, resumed: false },
    {
      rule: 'a blocked row is not touched',
      row: blocked('http_422'),
      only: undefined,
      resumed: false,
    },
  ])('$rule', ({ row, only, resumed }) => {
    const plan = planResumeHeld(observe(row), { owner: OWNER, ...(only ? { only } : {}) });
    expect(plan !== undefined).toBe(resumed);
    if (!plan) return;
    const put = plan.put![0] as OutboxRow;
    expect(put.state).toBe('queued');
    expect(put).not.toHaveProperty('heldAt');
    expect(put).not.toHaveProperty('nextAttemptAt');
    // The request, its key and the fence stay: a resumed row resends the same bytes (G2).
    expect(put.request).toEqual(row.request);
    expect(put.claim).toEqual(row.claim);
    expect(plan.expected).toEqual([{ id: row.id, row }]);
  });
});

/** SPEC §13 `retry`: only blocked rows, never a quarantined corrupt one; same key and bytes. */
describe('retrying a blocked row', () => {
  it.each([
    { rule: 'a blocked row is queued again', row: blocked('http_422'), refused: undefined },
    {
      rule: 'a row blocked because its handler failed is queued again (the server replays)',
      row: blocked('handler_failed'),
      refused: undefined,
    },
    { rule: 'a queued row is refused', row: updateRow(), refused: 'not_blocked' },
    { rule: 'a held row is refused', row: held('http_401'), refused: 'not_blocked' },
    {
      rule: 'a quarantined corrupt row is refused: it has nothing to send',
      row: blocked('row_corrupt'),
      refused: 'not_blocked',
    },
  ])('$rule', ({ row, refused }) => {
    const planned = planRetry(observe(row), { owner: OWNER });
    if (refused !== undefined) {
      expect(planned).toMatchObject({ kind: 'refuse', code: refused, details: { id: row.id } });
      return;
    }
    expect(planned.kind).toBe('apply');
    if (planned.kind !== 'apply') return;
    const put = planned.plan.put![0] as OutboxRow;
    expect(put.state).toBe('queued');
    for (const field of ['blockedAt', 'blockedCode', 'blockedDetail', 'nextAttemptAt'])
      expect(put).not.toHaveProperty(field);
    expect(put.request).toEqual(row.request);
    expect(put.claim?.fence).toBe(row.claim?.fence);
  });
});

/** SPEC §6.1: a retry is the app's new decision, ordered as made at the retry. */
describe('the place of a retried row', () => {
  const retried = { ...blocked('http_422'), seq: 3 };
  const planOf = (record: OutboxRow[]) => {
    const planned = planRetry(observe(retried), { owner: OWNER, record: record.map(observe) });
    if (planned.kind !== 'apply') throw new Error('expected a retry');
    return planned.plan;
  };
  const id = (n: number) => `notes-${n.toString(16).padStart(24, '0')}`;

  it('takes a new seq, and the edits that waited on it no longer do: they were made before it', () => {
    const waited = updateRow({ id: id(7), seq: 5, successorOf: retried.id });
    const plan = planOf([waited]);
    expect(plan.seq).toEqual([retried.id]);
    expect(plan.put?.find((row) => (row as OutboxRow).id === waited.id)).not.toHaveProperty(
      'successorOf',
    );
  });

  it('holds only while its record has exactly the rows it was planned from: a row added since was made before the retry', () => {
    const other = updateRow({ id: id(9), seq: 4 });
    expect(planOf([other]).records).toEqual([
      { collection: retried.collection, targetId: retried.targetId, ids: [retried.id, other.id] },
    ]);
  });

  it('the rows without seq of its record take their places before it, in the same transaction', () => {
    const legacy = [
      updateRow({ id: 'v0row-000000000000000000002', savedAt: NOW - 20 }),
      updateRow({ id: 'v0row-000000000000000000001', savedAt: NOW - 50 }),
      {
        ...updateRow({ id: 'v0row-000000000000000000003', savedAt: NOW - 10 }),
        state: 'sending',
        sentAt: NOW - 1,
      },
    ] as OutboxRow[];
    const plan = placingUnsequenced(planOf(legacy), legacy.map(observe), {
      now: NOW,
      leaseMs: 10_000,
    });
    // In their writers' order, then the retried row; the one in flight cannot be written, and
    // the retried row follows it.
    expect(plan.seq).toEqual([legacy[1]!.id, legacy[0]!.id, retried.id]);
    expect(plan.expected.map(({ id }) => id)).toEqual(
      expect.arrayContaining([legacy[0]!.id, legacy[1]!.id, legacy[2]!.id]),
    );
    expect(plan.put).toContainEqual(
      expect.objectContaining({ id: retried.id, successorOf: legacy[2]!.id }),
    );
  });

  it('a row without seq made after one in flight is not placed ahead of it: the retried row follows it instead', () => {
    const legacy = [
      {
        ...updateRow({ id: 'v0row-000000000000000000001', savedAt: NOW - 50 }),
        state: 'sending',
        sentAt: NOW - 1,
      },
      updateRow({ id: 'v0row-000000000000000000002', savedAt: NOW - 20 }),
    ] as OutboxRow[];
    const plan = placingUnsequenced(planOf(legacy), legacy.map(observe), {
      now: NOW,
      leaseMs: 10_000,
    });
    // Placed, the second would go before the first should that one come back unsent.
    expect(plan.seq).toEqual([retried.id]);
    expect(plan.put?.map((row) => (row as OutboxRow).id)).not.toContain(legacy[1]!.id);
    expect(plan.put).toContainEqual(
      expect.objectContaining({ id: retried.id, successorOf: legacy[1]!.id }),
    );
  });
  it('rows without seq stay unplaced while a row with seq links into one of them: the retried row follows the last of them', () => {
    // The row with seq was written while they were in flight, and follows the second: placed
    // behind it by seq, the second would be pulled ahead of the first by that link.
    const legacy = [
      updateRow({ id: 'v0row-000000000000000000001', savedAt: NOW - 50 }),
      updateRow({ id: 'v0row-000000000000000000002', savedAt: NOW - 20 }),
      updateRow({ id: 'v0row-000000000000000000003', savedAt: NOW - 10 }),
    ] as OutboxRow[];
    const linked = updateRow({ id: id(8), seq: 5, successorOf: legacy[1]!.id });
    const record = [...legacy, linked];
    const plan = placingUnsequenced(planOf(record), record.map(observe), {
      now: NOW,
      leaseMs: 10_000,
    });
    expect(plan.seq).toEqual([retried.id]);
    const put = plan.put?.map((row) => (row as OutboxRow).id);
    for (const row of legacy) expect(put).not.toContain(row.id);
    expect(plan.put).toContainEqual(
      expect.objectContaining({ id: retried.id, successorOf: legacy[2]!.id }),
    );
  });
});

/**
 * SPEC §6.1 "a row is sent only when every earlier row of its record is settled", with rows
 * without seq that a row with seq links into (written while the first of them was in flight):
 * whatever becomes of that row, the rows without seq go first, in their writers' order.
 */
describe('rows without seq a row with seq links into, after a retry', () => {
  const L1 = updateRow({ id: 'v0row-000000000000000000001', savedAt: NOW - 50 });
  const L2 = updateRow({ id: 'v0row-000000000000000000002', savedAt: NOW - 20 });
  const L3 = updateRow({ id: 'v0row-000000000000000000003', savedAt: NOW - 10 });
  const id = (n: number) => `notes-${n.toString(16).padStart(24, '0')}`;
  const linked = updateRow({ id: id(8), seq: 5, successorOf: L2.id, savedAt: NOW - 5_000 });
  const retried = { ...blocked('http_422', updateRow({ id: id(3) })), seq: 3 };
  const select = { now: NOW, leaseMs: LEASE, force: true };
  const lookup = (rows: OutboxRow[]) => (pid: string) => {
    const row = rows.find((r) => r.id === pid);
    return row === undefined ? 'absent' : row.state === 'blocked' ? 'blocked' : 'present';
  };

  /** The record once the retry committed: deletes, puts, a fresh seq for each of `plan.seq`. */
  function afterRetry(): OutboxRow[] {
    const record = [L1, L2, L3, linked];
    const planned = planRetry(observe(retried), { owner: OWNER, record: record.map(observe) });
    if (planned.kind !== 'apply') throw new Error('expected a retry');
    const plan = placingUnsequenced(planned.plan, record.map(observe), {
      now: NOW,
      leaseMs: LEASE,
    });
    let counter = 5;
    const fresh = new Map((plan.seq ?? []).map((rid) => [rid, ++counter]));
    const put = (plan.put ?? []).map((value) => {
      const row = value as OutboxRow;
      return fresh.has(row.id) ? { ...row, seq: fresh.get(row.id)! } : row;
    });
    const gone = new Set([...(plan.delete ?? []), ...put.map((row) => row.id)]);
    return [...[...record, retried].filter((row) => !gone.has(row.id)), ...put];
  }

  it.each([
    { what: 'queued', change: (rows: OutboxRow[]) => rows },
    {
      what: 'gone (a legacy tab sent it, by savedAt)',
      change: (rows: OutboxRow[]) => rows.filter((row) => row.id !== linked.id),
    },
    {
      what: 'blocked',
      change: (rows: OutboxRow[]) =>
        rows.map((row) => (row.id === linked.id ? blocked('http_422', row) : row)),
    },
  ])('with the linking row $what, the first of them goes first', ({ change }) => {
    const rows = change(afterRetry());
    expect(recordTurn(rows, select, lookup(rows))).toEqual({
      kind: 'go',
      row: expect.objectContaining({ id: L1.id }),
    });
  });
});

/**
 * SPEC §10 with §15: a conflict successor stands for the row it replaced, and that row may have
 * been re-issued under a new key past the server's retention — its id is no longer its request's.
 * The edits that wait on it name it by id, and wait on the successor; a retry of the successor
 * (made at the retry, §6.1) releases them. Read by request id alone, the edit waited on the
 * successor while the successor, retried, waited for the edit made before it: neither went (G1).
 */
describe('a conflict successor of a row re-issued under a new key', () => {
  const id = (n: number) => `notes-${n.toString(16).padStart(24, '0')}`;
  const base = updateRow({ id: id(2), seq: 2 });
  const original = { ...base, request: { ...base.request!, requestId: id(3) } };
  const resend = (state: Partial<OutboxRow>): OutboxRow => ({
    ...updateRow({ id: id(4), seq: 5, successorOf: original.id, baseRevision: 4 }),
    conflict: buildConflictEvidence(original, { currentRevision: 4 }, 412, NOW),
    ...state,
  });
  const waited = updateRow({ id: id(7), seq: 4, successorOf: original.id });
  // The store's lookup follows the original's `superseded` tombstone to the resend, for whom
  // its predecessor is simply gone.
  const lookup = (rows: OutboxRow[]) => (pid: string, asker?: string) =>
    (pid === original.id && asker !== id(4)) ||
    rows.some((r) => r.id === pid && r.state !== 'blocked')
      ? 'present'
      : 'absent';

  it('records the original’s id beside its new key, and stands for it', () => {
    expect(resend({}).conflict).toMatchObject({
      predecessor: { requestId: id(3), rowId: original.id },
    });
    const rows = [waited, resend({})];
    expect(recordTurn(rows, { now: NOW, leaseMs: LEASE, force: true }, lookup(rows))).toEqual({
      kind: 'go',
      row: expect.objectContaining({ id: id(4) }),
    });
  });

  it('retried, it releases the edit that waited on the original: that edit was made before the retry', () => {
    const planned = planRetry(observe(resend(blocked('handler_failed', resend({})))), {
      owner: OWNER,
      record: [observe(waited)],
    });
    if (planned.kind !== 'apply') throw new Error('expected a retry');
    const put = planned.plan.put?.find((row) => (row as OutboxRow).id === waited.id);
    expect(put).toBeDefined();
    expect(put).not.toHaveProperty('successorOf');
  });
});

/**
 * `retry` once a later edit of the record was applied past the row (`overtakenBy`, SPEC §6.1):
 * it meets that edit through the conflict rule (§10), with evidence of what the server really
 * answered — so none is written at the retry, where the server has answered nothing yet.
 */
describe('retrying a blocked row after a later edit of its record was applied', () => {
  const OVERTAKEN_BY = 'notes-0000000000000000000000u2';
  const overtaken = (code: string, baseRevision: number | null, mayHaveApplied = false) => ({
    ...blocked(code, updateRow({ baseRevision })),
    overtakenBy: OVERTAKEN_BY,
    evidence: {
      attemptCount: 1,
      lastErrorCode: code,
      ...(mayHaveApplied ? { mayHaveApplied } : {}),
    },
  });

  it.each([
    {
      rule: 'a refused row with a revision check goes as it is: its stale If-Match meets the server’s 412',
      row: overtaken('http_422', 3),
      state: 'queued',
    },
    {
      rule: 'a row that may have been applied keeps its key and bytes: the server replays its answer',
      row: overtaken('handler_failed', null, true),
      state: 'queued',
    },
    {
      rule: 'a refused row with no revision check stays blocked as a revision conflict: it would land over that edit unchecked',
      row: overtaken('http_422', null),
      state: 'blocked',
    },
    {
      rule: 'a refused row with no revision check and no edit past it goes as it is',
      row: { ...overtaken('http_422', null), overtakenBy: undefined },
      state: 'queued',
    },
  ])('$rule', ({ row, state }) => {
    const planned = planRetry(observe(row as OutboxRow), { owner: OWNER });
    if (planned.kind !== 'apply') throw new Error('expected a plan');
    const put = planned.plan.put![0] as OutboxRow;
    // The same row, key and bytes; nothing superseded, no conflict evidence the server never gave.
    expect(put).toMatchObject({ id: row.id, state, request: row.request });
    expect(put).not.toHaveProperty('conflict');
    expect(planned.plan.delete ?? []).toEqual([]);
    expect(planned.plan.tombstones ?? []).toEqual([]);
    if (state === 'blocked') {
      expect(put).toMatchObject({ blockedCode: 'revision_conflict', overtakenBy: OVERTAKEN_BY });
      expect(put.blockedDetail).toContain(OVERTAKEN_BY);
      // Still blocked: it takes no place among the rows to send.
      expect(planned.plan.seq ?? []).toEqual([]);
    } else {
      expect(planned.plan.seq).toEqual([row.id]);
      // Queued again with the mark of the edit that went past it: never merged into a later edit.
      expect(put.overtakenBy).toBe(row.overtakenBy);
    }
  });

  it('a refused row with no revision check stays blocked while a later edit of its record may have been applied, its answer not in yet (G4)', () => {
    const refused = { ...overtaken('http_422', null), overtakenBy: undefined, seq: 4 };
    const later = {
      ...updateRow({ id: OVERTAKEN_BY }),
      seq: 9,
      evidence: { attemptCount: 1, lastErrorCode: 'network', mayHaveApplied: true },
    };
    const planned = planRetry(observe(refused as OutboxRow), {
      owner: OWNER,
      record: [observe(later as OutboxRow)],
    });
    if (planned.kind !== 'apply') throw new Error('expected a plan');
    const put = planned.plan.put![0] as OutboxRow;
    expect(put).toMatchObject({ state: 'blocked', blockedCode: 'revision_conflict' });
    expect(put.blockedDetail).toContain(OVERTAKEN_BY);
    // An earlier row of unknown outcome is no edit past it: the retry goes.
    const earlier = planRetry(observe(refused as OutboxRow), {
      owner: OWNER,
      record: [observe({ ...later, seq: 2 } as OutboxRow)],
    });
    if (earlier.kind !== 'apply') throw new Error('expected a plan');
    expect(earlier.plan.put![0]).toMatchObject({ state: 'queued' });
  });

  it.each([
    {
      rule: 'with no revision check, it stays blocked as a revision conflict',
      baseRevision: null,
      state: 'blocked',
    },
    {
      rule: 'with a revision check, it queues after that edit with its mark, never merged: its stale If-Match meets the 412',
      baseRevision: 3,
      state: 'queued',
    },
  ])(
    'retried while a later edit of its record is on the wire, which the server may have applied already: $rule (G4)',
    ({ baseRevision, state }) => {
      const refused = { ...overtaken('http_422', baseRevision), overtakenBy: undefined, seq: 4 };
      const onWire = (seq: number) =>
        observe({ ...updateRow({ id: OVERTAKEN_BY }), seq, state: 'sending', sentAt: NOW - 5 });
      const planned = planRetry(observe(refused as OutboxRow), {
        owner: OWNER,
        inFlight: onWire(9),
        record: [onWire(9)],
      });
      if (planned.kind !== 'apply') throw new Error('expected a plan');
      const put = planned.plan.put![0] as OutboxRow;
      expect(put).toMatchObject({ state, overtakenBy: OVERTAKEN_BY, request: refused.request });
      if (state === 'queued') expect(put.successorOf).toBe(OVERTAKEN_BY);
      else expect(put.blockedCode).toBe('revision_conflict');
      // The same once its holder died with it on the wire: its claim ended, its outcome unknown.
      const died = planRetry(observe(refused as OutboxRow), {
        owner: OWNER,
        record: [
          observe({ ...onWire(9).row, claim: { holderId: 'gone', expiresAt: NOW - 1, fence: 1 } }),
        ],
      });
      if (died.kind !== 'apply') throw new Error('expected a plan');
      expect(died.plan.put![0]).toMatchObject({ state, overtakenBy: OVERTAKEN_BY });
      // An edit made before it, on the wire: no edit past it, no mark; it queues after that edit.
      const earlier = planRetry(observe(refused as OutboxRow), {
        owner: OWNER,
        inFlight: onWire(2),
        record: [onWire(2)],
      });
      if (earlier.kind !== 'apply') throw new Error('expected a plan');
      expect(earlier.plan.put![0]).toMatchObject({ state: 'queued', successorOf: OVERTAKEN_BY });
      expect((earlier.plan.put![0] as OutboxRow).overtakenBy).toBeUndefined();
    },
  );

  it('a later edit follows the retried row instead of folding its fields in over the newer edit (G4)', () => {
    const planned = planRetry(observe(overtaken('http_422', 3) as OutboxRow), { owner: OWNER });
    if (planned.kind !== 'apply') throw new Error('expected a plan');
    const retried = planned.plan.put![0] as OutboxRow;
    const later = planEnqueue(
      {
        id: 'notes-00000000000000000000new1',
        collection: 'notes',
        kind: 'update',
        targetId: retried.targetId,
        payload: { body: 'later' },
        baseRevision: 4,
      },
      [observe(retried)],
      undefined,
      { owner: OWNER, now: NOW, leaseMs: LEASE, maxRowBytes: 4096, handler: notes },
    );
    if (later.kind !== 'write') throw new Error('expected a write');
    expect(later.plan.delete ?? []).toEqual([]);
    expect(later.plan.put).toContainEqual(
      expect.objectContaining({ id: 'notes-00000000000000000000new1', successorOf: retried.id }),
    );
  });
});

/** SPEC §13 `discard` (G1: an explicit app call): blocked or held rows, tombstoned. */
/** SPEC §15: `retry` of a row whose key the server forgot is a new request through the revision check. */
describe('retrying a row blocked retention_exceeded', () => {
  const aged: OutboxRow = {
    ...blocked('retention_exceeded', updateRow({ baseRevision: 4 })),
    evidence: {
      attemptCount: 3,
      lastErrorCode: 'retention_exceeded',
      mayHaveApplied: true,
      firstAttemptAt: NOW - 9 * 86_400_000,
    },
  };
  const planned = planRetry(observe(aged), {
    owner: OWNER,
    reissue: { handler: notes, requestId: 'notes-0000000000000000000000aa' },
  });
  const put = (planned.kind === 'apply' ? planned.plan.put?.[0] : undefined) as
    | OutboxRow
    | undefined;

  it.each([
    { rule: 'it is queued again', actual: () => put?.state, expected: 'queued' },
    {
      rule: 'under a new key',
      actual: () => put?.request?.requestId,
      expected: 'notes-0000000000000000000000aa',
    },
    {
      rule: 'whose header carries it',
      actual: () => put?.request?.headers['idempotency-key'],
      expected: '"notes-0000000000000000000000aa"',
    },
    {
      rule: 'the same bytes (its fingerprint is of the bytes, not the key)',
      actual: () => [put?.request?.body, put?.request?.fingerprint],
      expected: [aged.request?.body, aged.request?.fingerprint],
    },
    {
      rule: 'still checked against the revision it was made from',
      actual: () => put?.request?.headers['if-match'],
      expected: '"4"',
    },
    {
      rule: 'its evidence starts anew — nothing of the new key left — but keeps that the old key may have been applied (never merged nor cancelled, G2)',
      actual: () => put?.evidence,
      expected: { attemptCount: 0, lastErrorCode: 'retention_exceeded', mayHaveApplied: true },
    },
    {
      rule: 'the block is gone',
      actual: () => [put?.blockedCode, put?.blockedAt],
      expected: [undefined, undefined],
    },
    {
      rule: 'it keeps its id and payload',
      actual: () => [put?.id, put?.payload],
      expected: [aged.id, aged.payload],
    },
    {
      rule: 'it is ordered as made at the retry: the store gives it a new seq (§6.1)',
      actual: () => (planned.kind === 'apply' ? planned.plan.seq : undefined),
      expected: [aged.id],
    },
  ])('$rule', ({ actual, expected }) => {
    expect(actual()).toEqual(expected);
  });

  it('without a handler to make the new request it is refused, the row left as it is', () => {
    expect(planRetry(observe(aged), { owner: OWNER })).toMatchObject({
      kind: 'refuse',
      code: 'unknown_collection',
    });
  });
});

describe('discarding a row', () => {
  const create = blocked('http_422', createRow());
  const intent = intentRow(create.id);
  const update = blocked('http_422');

  it.each([
    { rule: 'a blocked update goes, alone', row: update, record: [], removed: [update.id] },
    { rule: 'a held row goes', row: held('http_401'), record: [], removed: [updateRow().id] },
    {
      rule: 'a blocked create takes its intents along: they could never be sent',
      row: create,
      record: [create, intent],
      removed: [create.id, intent.id],
    },
    {
      rule: 'an update leaves the other rows of its record alone',
      row: update,
      record: [update, { ...updateRow({ id: 'notes-000000000000000000000009' }) }],
      removed: [update.id],
    },
    { rule: 'a queued row is refused', row: updateRow(), record: [], removed: undefined },
  ])('$rule', ({ row, record, removed }) => {
    const planned = planDiscard(observe(row), record.map(observe), { owner: OWNER, now: NOW });
    if (removed === undefined) {
      expect(planned).toMatchObject({ kind: 'refuse', code: 'not_blocked' });
      return;
    }
    expect(planned.kind).toBe('apply');
    if (planned.kind !== 'apply') return;
    expect(planned.plan.delete).toEqual(removed);
    expect(planned.plan.expected.map((e) => e.id)).toEqual(removed);
    expect(planned.plan.tombstones).toEqual(
      removed.map((id) => ({ id, owner: OWNER, reason: 'discarded', at: NOW })),
    );
    // Removing user intent is strictly durable (§3).
    expect(planned.plan.durability).toBe('strict');
  });
});
