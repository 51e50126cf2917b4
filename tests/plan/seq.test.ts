import { describe, expect, it } from 'vitest';
import { type OutboxRow, pendingCreateId } from '../../shared/model/row.ts';
import type { ReplacePlan } from '../../shared/model/store.ts';
import { planConflictSuccessor } from '../../shared/plan/conflict-successor.ts';
import { planEnqueue } from '../../shared/plan/enqueue.ts';
import type { EnqueueContext, NewIntent } from '../../shared/plan/enqueue-types.ts';
import { planIntentConversion } from '../../shared/plan/intent-conversion.ts';
import { inMadeOrder } from '../../shared/plan/made-order.ts';
import { planRetry } from '../../shared/plan/manual-actions.ts';
import {
  claimedBy,
  createRow,
  deferred,
  intentRow,
  LEASE,
  legacySending,
  NOW,
  notes,
  OTHER,
  OWNER,
  observe,
  receiptOf,
  updateRow,
} from './fixtures.ts';

/**
 * SPEC §6.1: a row's place in its owner's commit order is `seq`, which the store assigns in the
 * transaction that writes the row. Each planner says which rows take a fresh one (`plan.seq`) and
 * which keep the place of the edit they carry.
 */

const ctx: EnqueueContext = {
  owner: OWNER,
  now: NOW,
  leaseMs: LEASE,
  maxRowBytes: 4096,
  handler: notes,
};
const NEW_ID = 'notes-00000000000000000000new1';
const update: NewIntent = {
  id: NEW_ID,
  collection: 'notes',
  kind: 'update',
  targetId: 'n_1',
  payload: { body: 'later' },
  baseRevision: 5,
};
const create = createRow();

/** The row a plan writes under `id`, and whether the plan asks a fresh `seq` for it. */
function placed(plan: ReplacePlan, id: string): { seq: number | undefined; fresh: boolean } {
  const row = plan.put?.find((r) => (r as OutboxRow).id === id) as OutboxRow | undefined;
  if (row === undefined) throw new Error(`no row ${id} in ${JSON.stringify(plan)}`);
  return { seq: row.seq, fresh: plan.seq?.includes(id) === true };
}

/**
 * Plans `intent` against the record's `rows`; an edit of `pending:<C>` is told of C as the engine
 * tells it: C's row when it is among them, else a create that vanished (§8).
 */
function enqueued(rows: OutboxRow[], intent: NewIntent = update): ReplacePlan {
  const createId = intent.targetId === undefined ? undefined : pendingCreateId(intent.targetId);
  const create = rows.find((row) => row.id === createId);
  const pending =
    createId === undefined
      ? undefined
      : { id: createId, ...(create === undefined ? {} : { row: observe(create) }) };
  const planned = planEnqueue(intent, rows.map(observe), pending, ctx);
  if (planned.kind !== 'write') throw new Error(`expected a write: ${JSON.stringify(planned)}`);
  return planned.plan;
}

describe('the place a planner gives each row it writes (SPEC §6.1)', () => {
  it.each([
    { rule: 'a new edit of a record with no rows takes a fresh seq', rows: [] },
    {
      rule: 'a successor of a row in flight takes a fresh seq, whatever the seq it follows',
      rows: [claimedBy(updateRow({ seq: 3 }), OTHER, 1)],
    },
    {
      rule: 'an intent over a create in flight takes a fresh seq',
      rows: [claimedBy(createRow({ seq: 2 }), OTHER, 1)],
      intent: { ...update, targetId: create.targetId },
    },
    {
      rule: 'a merged row of rows without seq (a legacy writer’s) takes a fresh seq: they were committed after every row they do not link to',
      rows: [updateRow()],
    },
    {
      rule: 'an edit of a create that vanished takes a fresh seq after the intent: its record is unknown, so an edit of the server id made since may be of it',
      rows: [intentRow(create.id, { seq: 6 })],
      intent: { ...update, targetId: create.targetId },
    },
  ])('$rule', ({ rows, intent }) => {
    const plan = enqueued(rows, intent);
    expect(placed(plan, NEW_ID)).toEqual({ seq: undefined, fresh: true });
    expect(plan.seq).toEqual([NEW_ID]);
  });

  it.each([
    {
      rule: 'a merged row keeps the seq of the row it replaces',
      rows: [updateRow({ seq: 4 })],
      intent: update,
      seq: 4,
    },
    {
      rule: 'an intent merged into an earlier intent keeps that intent’s seq',
      rows: [claimedBy(createRow({ seq: 2 }), OTHER, 1), intentRow(create.id, { seq: 6 })],
      intent: { ...update, targetId: create.targetId },
      seq: 6,
    },
  ])('$rule', ({ rows, intent, seq }) => {
    const plan = enqueued(rows, intent);
    expect(placed(plan, NEW_ID)).toEqual({ seq, fresh: false });
    expect(plan.seq).toBeUndefined();
  });

  it('a conflict successor keeps the seq of the edit it carries', () => {
    const original = claimedBy(updateRow({ seq: 8 }), OTHER, 1);
    const planned = planConflictSuccessor(original, original, { currentRevision: 9 }, 412, {
      owner: OWNER,
      holderId: OTHER,
      fence: 1,
      now: NOW,
      successorId: 'notes-0000000000000000000000s1',
      handler: notes,
    });
    if (planned.kind !== 'successor') throw new Error('expected a successor');
    expect(placed(planned.plan, planned.successor.id)).toEqual({ seq: 8, fresh: false });
  });

  it('a converted intent keeps the seq of the edit it carries', () => {
    const intent = intentRow(create.id, { seq: 9 });
    let n = 0;
    const plan = planIntentConversion([observe(intent)], create, receiptOf(create), notes, {
      now: NOW,
      owner: OWNER,
      newId: (prefix) => `${prefix}-${(++n).toString(16).padStart(24, '0')}`,
    });
    expect(plan.put.map((row) => row.seq)).toEqual([9]);
  });

  const blocked = (row: OutboxRow): OutboxRow => ({
    ...deferred(row),
    state: 'blocked',
    blockedAt: NOW - 1_000,
    blockedCode: 'http_422',
    blockedDetail: 'why',
    evidence: { attemptCount: 1, lastErrorCode: 'http_422' },
  });

  it.each([
    { rule: 'a retried row takes a fresh seq: it is ordered as made at the retry', seq: 2 },
    { rule: 'a retried legacy row takes one too', seq: undefined },
  ])('$rule', ({ seq }) => {
    const row = blocked(updateRow(seq === undefined ? {} : { seq }));
    const planned = planRetry(observe(row), { owner: OWNER });
    if (planned.kind !== 'apply') throw new Error('expected a plan');
    expect(planned.plan.seq).toEqual([row.id]);
  });

  it('a retry after a newer edit was applied gives the row it queues again a fresh seq', () => {
    const row = {
      ...blocked(updateRow({ seq: 2, baseRevision: 3 })),
      overtakenBy: 'notes-0000000000000000000000u2',
      evidence: { attemptCount: 1, lastErrorCode: 'http_422' },
    };
    const planned = planRetry(observe(row), { owner: OWNER });
    if (planned.kind !== 'apply') throw new Error('expected a plan');
    expect(planned.plan.seq).toEqual([row.id]);
  });
});

/** SPEC §6.1: everything that asks "which edit came first" compares `seq`, never a clock. */
describe('which edit came first (SPEC §6.1)', () => {
  const u1 = updateRow({ id: 'notes-0000000000000000000000u1', seq: 1 });
  const u2 = updateRow({ id: 'notes-0000000000000000000000u2', seq: 2, successorOf: u1.id });

  it.each([
    {
      rule: 'the row made last, though another holder’s clock says it was sent first',
      rows: [claimedBy(u1, OTHER, 1, NOW - 100), legacySending(u2, NOW - 5_000)],
      predecessor: u2.id,
    },
    {
      rule: 'the row made last, though both were sent in the same millisecond',
      rows: [claimedBy(u1, OTHER, 1, NOW - 100), legacySending(u2, NOW - 100)],
      predecessor: u2.id,
    },
    {
      rule: 'the row made last, whichever order the rows were read in',
      rows: [legacySending(u2, NOW - 100), claimedBy(u1, OTHER, 1, NOW - 5_000)],
      predecessor: u2.id,
    },
    {
      rule: 'the row in flight, not a newer format’s row saved after it, which holds nothing (§6)',
      rows: [
        legacySending(
          updateRow({ id: 'notes-0000000000000000000000v0', seq: undefined }),
          NOW - 100,
        ),
        {
          ...updateRow({ id: 'notes-0000000000000000000000f2', seq: undefined, savedAt: NOW - 50 }),
          v: 2,
        } as unknown as OutboxRow,
      ],
      predecessor: 'notes-0000000000000000000000v0',
    },
  ])('a new edit of a record with rows in flight follows $rule', ({ rows, predecessor }) => {
    const plan = enqueued(rows);
    const row = plan.put?.find((r) => (r as OutboxRow).id === NEW_ID) as OutboxRow;
    expect(row.successorOf).toBe(predecessor);
  });

  it.each([
    {
      rule: 'by seq when every row has one, whatever their savedAt',
      rows: [
        { id: 'b', seq: 2, savedAt: 1 },
        { id: 'a', seq: 1, savedAt: 9 },
        { id: 'c', seq: 3, savedAt: 5 },
      ],
      order: ['a', 'b', 'c'],
    },
    {
      rule: 'rows without seq after those with one (committed after them), among themselves by savedAt, then id',
      rows: [
        { id: 'b', seq: 2, savedAt: 9 },
        { id: 'e', savedAt: 1 },
        { id: 'a', savedAt: 0 },
        { id: 'c', seq: 1, savedAt: 5 },
        { id: 'd', savedAt: 1 },
      ],
      order: ['c', 'b', 'a', 'd', 'e'],
    },
  ])('orders rows $rule', ({ rows, order }) => {
    const sorted = inMadeOrder(rows.map((row) => ({ row })));
    expect(sorted.map(({ row }) => row.id)).toEqual(order);
  });

  it('converts the intents of a create in the order they were made, not the order of their clocks', () => {
    const first = intentRow(create.id, {
      id: 'notes-0000000000000000000000i1',
      seq: 3,
      savedAt: NOW,
      payload: { title: 'first' },
    });
    const second = intentRow(create.id, {
      id: 'notes-0000000000000000000000i2',
      seq: 4,
      savedAt: NOW - 900,
      payload: { title: 'second' },
    });
    let n = 0;
    const plan = planIntentConversion(
      [observe(second), observe(first)],
      create,
      receiptOf(create),
      notes,
      {
        now: NOW,
        owner: OWNER,
        newId: (prefix) => `${prefix}-${(++n).toString(16).padStart(24, '0')}`,
      },
    );
    expect(plan.converted.map((c) => c.intentId)).toEqual([first.id, second.id]);
  });
});
