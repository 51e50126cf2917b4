import { describe, expect, it } from 'vitest';
import type { Observed, OutboxRow } from '../../shared/model/row.ts';
import type { ReplacePlan } from '../../shared/model/store.ts';
import { planEnqueue } from '../../shared/plan/enqueue.ts';
import type {
  EnqueueContext,
  EnqueuePlan,
  NewIntent,
  PendingCreateFacts,
} from '../../shared/plan/enqueue-types.ts';
import {
  abandoned,
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
  unanswered,
  updateRow,
} from './fixtures.ts';

const ctx: EnqueueContext = {
  owner: OWNER,
  now: NOW,
  leaseMs: LEASE,
  maxRowBytes: 1024,
  handler: notes,
};
const NEW_ID = 'notes-00000000000000000000new1';

function update(overrides: Partial<NewIntent> = {}): NewIntent {
  return {
    id: NEW_ID,
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    payload: { body: 'later' },
    baseRevision: 5,
    ...overrides,
  };
}

function written(planned: EnqueuePlan): { plan: ReplacePlan; row: OutboxRow; outcome: string } {
  if (planned.kind !== 'write') throw new Error(`expected a write, got ${JSON.stringify(planned)}`);
  return {
    plan: planned.plan,
    row: planned.plan.put?.[0] as OutboxRow,
    outcome: planned.result.outcome,
  };
}

/** SPEC §6 first table: what happens to the rows already queued for the record. */
describe('an intent for a record with earlier rows (SPEC §6)', () => {
  const earlier = updateRow({ payload: { title: 'first' } });

  it('with no earlier row the intent is queued at now, with its own request id', () => {
    const { row, outcome, plan } = written(planEnqueue(update(), [], undefined, ctx));
    expect(outcome).toBe('queued');
    expect(row).toMatchObject({ id: NEW_ID, savedAt: NOW, state: 'queued', baseRevision: 5 });
    expect(row.request?.requestId).toBe(NEW_ID);
    expect(row).not.toHaveProperty('successorOf');
    expect(plan.expected).toEqual([{ id: NEW_ID, row: null }]);
    expect(plan.durability).toBe('strict');
  });

  it.each([
    {
      name: 'a v1 row in flight',
      inFlight: [claimedBy(earlier, OTHER, 1)],
      predecessor: earlier.id,
    },
    {
      name: "a legacy tab's fresh sending row (§4 fallback)",
      inFlight: [legacySending(earlier, NOW - 1)],
      predecessor: earlier.id,
    },
    {
      name: 'two rows in flight, the later-sent one taken as predecessor',
      inFlight: [
        claimedBy(earlier, OTHER, 1, NOW - 300),
        legacySending(
          updateRow({ id: 'notes-000000000000000000000002', savedAt: NOW - 900 }),
          NOW - 100,
        ),
      ],
      predecessor: 'notes-000000000000000000000002',
    },
  ])(
    '$name is kept untouched and the new row becomes its successor',
    ({ inFlight, predecessor }) => {
      const observed = inFlight.map(observe);
      const { row, outcome, plan } = written(planEnqueue(update(), observed, undefined, ctx));
      expect(outcome).toBe('successor');
      expect(row).toMatchObject({ id: NEW_ID, successorOf: predecessor, savedAt: NOW });
      expect(plan.put).toHaveLength(1);
      expect(plan.delete).toEqual([]);
      expect(plan.tombstones).toEqual([]);
      expect(plan.expected).toEqual([
        ...observed.map((o) => ({ id: o.row.id, row: o.raw })),
        { id: NEW_ID, row: null },
      ]);
    },
  );

  it.each([
    { name: 'queued', state: earlier },
    { name: 'deferred', state: deferred(earlier) },
    { name: 'held', state: { ...deferred(earlier), state: 'held', heldAt: NOW - 10 } },
    { name: 'blocked', state: { ...deferred(earlier), state: 'blocked', blockedCode: 'http_400' } },
  ])('a $name row is replaced by one merged row that keeps its queue place', ({ state }) => {
    const { row, outcome, plan } = written(planEnqueue(update(), [observe(state)], undefined, ctx));
    expect(outcome).toBe('coalesced');
    expect(row).toMatchObject({
      id: NEW_ID,
      state: 'queued',
      savedAt: earlier.savedAt,
      baseRevision: earlier.baseRevision,
      payload: { title: 'first', body: 'later' },
    });
    for (const attemptField of [
      'claim',
      'sentAt',
      'deferredAt',
      'nextAttemptAt',
      'heldAt',
      'blockedCode',
      'evidence',
    ])
      expect(row).not.toHaveProperty(attemptField);
    expect(plan.delete).toEqual([earlier.id]);
    expect(plan.tombstones).toEqual([
      { id: earlier.id, owner: OWNER, reason: 'coalesced', into: NEW_ID, at: NOW },
    ]);
  });

  it.each([
    { name: 'deferred by a network error', state: unanswered(earlier) },
    { name: 'deferred by a timeout', state: unanswered(earlier, 'timeout') },
    { name: 'answered 502', state: unanswered(earlier, 'http_502') },
    { name: 'answered 504', state: unanswered(earlier, 'http_504') },
    { name: 'answered 409 request-in-progress', state: unanswered(earlier, 'request_in_progress') },
    {
      name: 'blocked because its answer could not be read',
      state: {
        ...unanswered(earlier, 'handler_failed'),
        state: 'blocked',
        blockedCode: 'handler_failed',
      },
    },
    { name: 'claimed by a holder that died mid-send', state: abandoned(earlier) },
    {
      name: 'deferred by a 503 after an attempt with no answer',
      state: {
        ...unanswered(earlier),
        evidence: { attemptCount: 2, lastErrorCode: 'http_503', mayHaveApplied: true },
      },
    },
  ])(
    'a row with an unknown outcome ($name) is never merged: the new row is its successor (G2)',
    ({ state }) => {
      const { row, outcome, plan } = written(
        planEnqueue(update(), [observe(state)], undefined, ctx),
      );
      expect(outcome).toBe('successor');
      expect(row).toMatchObject({
        id: NEW_ID,
        savedAt: NOW,
        successorOf: earlier.id,
        payload: { body: 'later' },
      });
      expect(plan.delete).toEqual([]);
      expect(plan.tombstones).toEqual([]);
    },
  );

  it('several rows not in flight fold into one, keeping the oldest savedAt and baseRevision', () => {
    const older = updateRow({ payload: { a: 1 }, baseRevision: 2, savedAt: NOW - 3_000 });
    const newer = {
      ...updateRow({
        id: 'notes-000000000000000000000002',
        payload: { b: 2 },
        baseRevision: 4,
        savedAt: NOW - 1_000,
      }),
      state: 'held',
    };
    const { row, plan } = written(
      planEnqueue(update({ payload: { c: 3 } }), [observe(newer), observe(older)], undefined, ctx),
    );
    expect(row).toMatchObject({
      savedAt: NOW - 3_000,
      baseRevision: 2,
      payload: { a: 1, b: 2, c: 3 },
      request: { headers: { 'if-match': '"2"' } },
    });
    expect(plan.delete).toEqual([older.id, newer.id]);
    expect(plan.tombstones?.map((t) => [t.id, t.reason, t.into])).toEqual([
      [older.id, 'coalesced', NEW_ID],
      [newer.id, 'coalesced', NEW_ID],
    ]);
  });

  it('a queued successor is merged and keeps the successorOf of the row it replaces; the row in flight stays', () => {
    const sending = claimedBy({ ...earlier, seq: 1 }, OTHER, 1);
    const waiting = updateRow({
      id: 'notes-000000000000000000000002',
      savedAt: NOW - 500,
      successorOf: earlier.id,
      payload: { b: 1 },
      seq: 2,
    });
    const { row, plan } = written(
      planEnqueue(update(), [observe(sending), observe(waiting)], undefined, ctx),
    );
    expect(row).toMatchObject({ successorOf: earlier.id, savedAt: NOW - 500 });
    expect(plan.delete).toEqual([waiting.id]);
    expect(plan.expected.map((e) => e.id)).toEqual([earlier.id, waiting.id, NEW_ID]);
  });

  it('an edit whose request already left (a Workbox route’s own attempt, §22) is never merged: it follows the queued row under its own key (G2)', () => {
    const waiting = updateRow({ id: 'notes-000000000000000000000002', payload: { b: 1 } });
    const evidence = { attemptCount: 1, lastErrorCode: 'network', mayHaveApplied: true };
    const { row, plan } = written(
      planEnqueue(update({ evidence }), [observe(waiting)], undefined, ctx),
    );
    expect(row).toMatchObject({ id: NEW_ID, successorOf: waiting.id, evidence });
    expect(plan.delete ?? []).toEqual([]);
    // Without that evidence the same edit folds the queued row in.
    const merged = written(planEnqueue(update(), [observe(waiting)], undefined, ctx));
    expect(merged.plan.delete).toEqual([waiting.id]);
  });

  it('a blocked row before a row in flight is not merged: the new row follows the one in flight (G4)', () => {
    const rejected = {
      ...deferred(earlier),
      state: 'blocked',
      blockedCode: 'http_422',
      evidence: { attemptCount: 1, lastErrorCode: 'http_422' },
    };
    const sending = claimedBy(
      updateRow({
        id: 'notes-000000000000000000000002',
        savedAt: NOW - 500,
        successorOf: earlier.id,
      }),
      OTHER,
      1,
    );
    const { row, outcome, plan } = written(
      planEnqueue(update(), [observe(rejected), observe(sending)], undefined, ctx),
    );
    expect(outcome).toBe('successor');
    expect(row).toMatchObject({ id: NEW_ID, savedAt: NOW, successorOf: sending.id });
    expect(row.payload).toEqual({ body: 'later' });
    expect(plan.delete).toEqual([]);
  });

  it('a queued row whose predecessor already settled merges alone: a blocked row before it stays (G4)', () => {
    const rejected = { ...deferred(earlier), seq: 1, state: 'blocked', blockedCode: 'http_422' };
    const waiting = updateRow({
      id: 'notes-000000000000000000000003',
      savedAt: NOW - 200,
      successorOf: 'notes-000000000000000000000002',
      payload: { title: 'second' },
      seq: 2,
    });
    const { row, outcome, plan } = written(
      planEnqueue(update(), [observe(rejected), observe(waiting)], undefined, ctx),
    );
    expect(outcome).toBe('coalesced');
    expect(row).toMatchObject({
      savedAt: waiting.savedAt,
      successorOf: waiting.successorOf,
      payload: { title: 'second', body: 'later' },
    });
    expect(plan.delete).toEqual([waiting.id]);
  });

  it('a row sent before and retried behind an edit whose answer was lost is not merged: merged, it would be rebased on the receipt of that edit and land over it unchecked (G4)', () => {
    // The later edit was sent and its claim ran out with no ACK: it may have been applied.
    const lost = abandoned(
      updateRow({ id: 'notes-000000000000000000000002', savedAt: NOW - 500, seq: 3 }),
    );
    // The refused edit, retried by the app: queued again, made at the retry.
    const retried = {
      ...updateRow({ id: earlier.id, savedAt: NOW - 900, seq: 4 }),
      evidence: { attemptCount: 1, lastErrorCode: 'http_422' },
    };
    const { row, outcome, plan } = written(
      planEnqueue(update(), [observe(lost), observe(retried)], undefined, ctx),
    );
    expect(outcome).toBe('successor');
    expect(row).toMatchObject({ id: NEW_ID, successorOf: retried.id });
    expect(plan.delete).toEqual([]);
  });

  it('rows merged after a row in flight go after it even when the oldest of them names no predecessor', () => {
    const sending = claimedBy({ ...earlier, seq: 1 }, OTHER, 1);
    const unlinked = updateRow({
      id: 'notes-000000000000000000000002',
      savedAt: NOW - 500,
      seq: 2,
    });
    const { row } = written(
      planEnqueue(update(), [observe(sending), observe(unlinked)], undefined, ctx),
    );
    expect(row).toMatchObject({ savedAt: unlinked.savedAt, successorOf: sending.id });
  });

  it('a legacy row left out of a merge is not passed by it: nothing merges, and the new row follows it (§6.1, G4)', () => {
    // Committed after the row with seq (an unplaced legacy row always is), whatever its clock.
    const queued = updateRow({ id: 'notes-000000000000000000000002', payload: { b: 1 }, seq: 3 });
    const newer = { ...updateRow({ id: 'v2row-000000000000000000001' }), v: 2 };
    const legacy = updateRow({ id: 'v0row-000000000000000000001', savedAt: NOW - 60_000 });
    const linked = { ...queued, successorOf: newer.id };
    const { row, plan } = written(
      planEnqueue(
        update(),
        [observe(newer as OutboxRow), observe(linked), observe(legacy)],
        undefined,
        ctx,
      ),
    );
    expect(plan.delete ?? []).toEqual([]);
    expect(plan.seq).toEqual([legacy.id, NEW_ID]);
    expect(row.id).toBe(NEW_ID);
  });

  it('a row whose link puts it last but whose seq is older than a row left out is not merged: the new edit would go ahead of that row (§6.1, G4)', () => {
    // Retried after the others were made: ordered as made then (seq 4), still queued.
    const retried = updateRow({ id: 'notes-000000000000000000000002', payload: { a: 1 }, seq: 4 });
    // Made before the retry and blocked; its link to the retried row was never taken off.
    const blocked = {
      ...updateRow({ id: 'notes-000000000000000000000003', seq: 2, successorOf: retried.id }),
      state: 'blocked',
      blockedCode: 'handler_failed',
    };
    const newer = {
      ...updateRow({ id: 'v2row-000000000000000000001' }),
      v: 2,
      successorOf: blocked.id,
    };
    // Made before the retry too (seq 3), linked after the newer bundle's row: last by links.
    const queued = updateRow({
      id: 'notes-000000000000000000000004',
      payload: { b: 1 },
      seq: 3,
      successorOf: newer.id,
    });
    const { row, plan } = written(
      planEnqueue(
        update(),
        [
          observe(retried),
          observe(blocked as OutboxRow),
          observe(newer as OutboxRow),
          observe(queued),
        ],
        undefined,
        ctx,
      ),
    );
    // Merged, it would keep seq 3 and go before the retried row, carrying an edit made after it.
    expect(plan.delete ?? []).toEqual([]);
    expect(plan.seq).toEqual([NEW_ID]);
    expect(row).toMatchObject({ id: NEW_ID, payload: { body: 'later' } });
  });

  it('a merge keeps the conflict evidence of the successor it absorbs, so its ledger entry is still written (§6, G5)', () => {
    const evidence = { version: 1, predecessor: { requestId: 'notes-000000000000000000000009' } };
    const successor = updateRow({
      successorOf: 'notes-000000000000000000000009',
      conflict: evidence,
      evidence: { attemptCount: 1, lastErrorCode: 'revision_conflict' },
    });
    const { row, outcome } = written(planEnqueue(update(), [observe(successor)], undefined, ctx));
    expect(outcome).toBe('coalesced');
    expect(row).toMatchObject({ conflict: evidence, successorOf: successor.successorOf });
    expect(row).not.toHaveProperty('evidence');
  });

  it('a quarantined row is never merged: the new row is its successor, its raw value kept (G7)', () => {
    const quarantined = {
      v: 1,
      id: 'notes-0000000000000000000bad01',
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      targetId: 'n_1',
      savedAt: NOW - 700,
      state: 'blocked',
      blockedCode: 'row_corrupt',
      raw: { id: 'notes-0000000000000000000bad01', baseRevision: 'three' },
    } as OutboxRow;
    const { row, outcome, plan } = written(
      planEnqueue(update(), [observe(quarantined)], undefined, ctx),
    );
    expect(outcome).toBe('successor');
    expect(row).toMatchObject({
      savedAt: NOW,
      successorOf: quarantined.id,
      payload: { body: 'later' },
    });
    expect(plan.delete).toEqual([]);
    expect(plan.expected).toContainEqual({ id: quarantined.id, row: quarantined });
  });

  it('a coalesced request gets a new request id and a new fingerprint (§9)', () => {
    const { row } = written(planEnqueue(update(), [observe(earlier)], undefined, ctx));
    expect(row.request?.requestId).toBe(NEW_ID);
    expect(row.request?.requestId).not.toBe(earlier.request?.requestId);
    expect(row.request?.fingerprint).not.toBe(earlier.request?.fingerprint);
    expect(row.request?.headers['idempotency-key']).toBe(`"${NEW_ID}"`);
  });
});

/** SPEC §6 default merge rules, and §8 for a create that was already attempted. */
describe('merge rules (SPEC §6)', () => {
  const create = createRow({ payload: { title: 'draft', body: 'x' } });
  const pendingTarget = create.targetId;
  const pendingFacts = (row: OutboxRow): PendingCreateFacts => ({
    id: create.id,
    row: observe(row),
  });
  const onCreate = (kind: string, payload?: NewIntent['payload']) =>
    update({ kind, targetId: pendingTarget, payload, baseRevision: null });

  it('update + update → one update with the payloads shallow-merged, later wins', () => {
    const earlier = updateRow({ payload: { title: 'a', body: 'x' } });
    const { row } = written(
      planEnqueue(update({ payload: { body: 'y', tag: 'z' } }), [observe(earlier)], undefined, ctx),
    );
    expect(row).toMatchObject({ kind: 'update', payload: { title: 'a', body: 'y', tag: 'z' } });
    expect(row.request).toMatchObject({ method: 'PATCH', url: '/api/notes/n_1' });
    expect(JSON.parse(row.request?.body ?? '')).toEqual({ title: 'a', body: 'y', tag: 'z' });
  });

  it.each([
    { name: 'never attempted', state: create },
    { name: 'deferred by a 503', state: deferred(create) },
    {
      name: 'blocked by a 4xx',
      state: {
        ...deferred(create),
        state: 'blocked',
        blockedCode: 'http_400',
        evidence: { attemptCount: 1, lastErrorCode: 'http_400' },
      },
    },
  ])('create ($name) + update → one create with the merged payload', ({ state }) => {
    const { row, outcome, plan } = written(
      planEnqueue(onCreate('update', { body: 'y' }), [observe(state)], pendingFacts(state), ctx),
    );
    expect(outcome).toBe('coalesced');
    expect(row).toMatchObject({
      kind: 'create',
      targetId: pendingTarget,
      savedAt: create.savedAt,
      payload: { title: 'draft', body: 'y' },
      request: { method: 'POST', url: '/api/notes', requestId: NEW_ID },
    });
    expect(plan.delete).toEqual([create.id]);
    expect(plan.tombstones).toEqual([
      { id: create.id, owner: OWNER, reason: 'coalesced', into: NEW_ID, at: NOW },
    ]);
  });

  it.each([
    { name: 'deferred by a network error', state: unanswered(create) },
    { name: 'answered 500', state: unanswered(create, 'http_500') },
    {
      name: 'blocked because its 201 could not be read',
      state: {
        ...unanswered(create, 'handler_failed'),
        state: 'blocked',
        blockedCode: 'handler_failed',
      },
    },
    { name: 'claimed by a holder that died mid-send', state: abandoned(create) },
    {
      name: 'held by a 401 after an attempt with no answer',
      state: {
        ...unanswered(create),
        state: 'held',
        evidence: { attemptCount: 2, lastErrorCode: 'http_401', mayHaveApplied: true },
      },
    },
    { name: 'in flight', state: claimedBy(create, OTHER, 1) },
  ])('create ($name) + update → an intent row, the create untouched (§8)', ({ state }) => {
    const { row, outcome, plan } = written(
      planEnqueue(onCreate('update', { body: 'y' }), [observe(state)], pendingFacts(state), ctx),
    );
    expect(outcome).toBe('intent');
    expect(row).toEqual({
      v: 1,
      id: NEW_ID,
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      targetId: pendingTarget,
      savedAt: NOW,
      state: 'queued',
      payload: { body: 'y' },
      baseRevision: null,
      successorOf: create.id,
    });
    expect(plan.delete).toEqual([]);
  });

  it('create (never attempted) + an edit of a kind without merge rules → an intent row after the create, never a request to pending:<C> (§8)', () => {
    const { row, outcome, plan } = written(
      planEnqueue(
        onCreate('archive', { archived: true }),
        [observe(create)],
        pendingFacts(create),
        ctx,
      ),
    );
    expect(outcome).toBe('intent');
    expect(row).toMatchObject({ kind: 'archive', targetId: pendingTarget, successorOf: create.id });
    expect(row.request).toBeUndefined();
    expect(plan.delete).toEqual([]);
  });

  it('create (never attempted) + delete → both cancelled: nothing written, nothing sent', () => {
    const planned = planEnqueue(onCreate('delete'), [observe(create)], pendingFacts(create), ctx);
    expect(planned).toMatchObject({ kind: 'write', result: { outcome: 'cancelled' } });
    const { plan } = written(planned);
    expect(plan.put ?? []).toEqual([]);
    expect(plan.delete).toEqual([create.id]);
    expect(plan.tombstones?.map((t) => [t.id, t.reason])).toEqual([
      [create.id, 'cancelled'],
      [NEW_ID, 'cancelled'],
    ]);
  });

  it('create (deferred by a 503: nothing applied) + delete → both cancelled', () => {
    const state = deferred(create);
    expect(
      planEnqueue(onCreate('delete'), [observe(state)], pendingFacts(state), ctx),
    ).toMatchObject({ kind: 'write', result: { outcome: 'cancelled' } });
  });

  it.each([
    { name: 'deferred by a network error', state: unanswered(create) },
    {
      name: 'blocked because its 201 could not be read',
      state: {
        ...unanswered(create, 'handler_failed'),
        state: 'blocked',
        blockedCode: 'handler_failed',
      },
    },
  ])('create ($name) + delete → a delete intent row, the create untouched (§8)', ({ state }) => {
    const { row, outcome } = written(
      planEnqueue(onCreate('delete'), [observe(state)], pendingFacts(state), ctx),
    );
    expect(outcome).toBe('intent');
    expect(row).toMatchObject({ kind: 'delete', targetId: pendingTarget, successorOf: create.id });
    expect(row).not.toHaveProperty('request');
  });

  it('update + delete → one delete, made from the oldest baseRevision', () => {
    const earlier = updateRow({ baseRevision: 3 });
    const { row, outcome } = written(
      planEnqueue(
        update({ kind: 'delete', payload: undefined }),
        [observe(earlier)],
        undefined,
        ctx,
      ),
    );
    expect(outcome).toBe('coalesced');
    expect(row).toMatchObject({ kind: 'delete', baseRevision: 3 });
    expect(row.request).toMatchObject({
      method: 'DELETE',
      url: '/api/notes/n_1',
      body: null,
      headers: { 'if-match': '"3"' },
    });
  });

  it.each([
    { name: 'delete (queued) + update', earlier: updateRow({ kind: 'delete' }), later: 'update' },
    { name: 'delete (queued) + delete', earlier: updateRow({ kind: 'delete' }), later: 'delete' },
    {
      name: 'delete (in flight) + update',
      earlier: claimedBy(updateRow({ kind: 'delete' }), OTHER, 1),
      later: 'update',
    },
  ])('$name → the enqueue is rejected with target_deleted', ({ earlier, later }) => {
    expect(planEnqueue(update({ kind: later }), [observe(earlier)], undefined, ctx)).toMatchObject({
      kind: 'reject',
      code: 'target_deleted',
    });
  });
});

/** SPEC §8 on the enqueue side: what is known about the pending create decides the plan. */
describe('an edit of pending:<C> (SPEC §8)', () => {
  const create = createRow();
  const edit = update({ targetId: create.targetId, baseRevision: null });

  it('C already has a receipt: the edit is planned again against the server id and revision', () => {
    const receipt = { ...receiptOf(create), serverId: 'n_9', revision: 2 };
    expect(planEnqueue(edit, [], { id: create.id, receipt }, ctx)).toEqual({
      kind: 'retarget',
      targetId: 'n_9',
      baseRevision: 2,
    });
  });

  it('C was cancelled: the edit is rejected with target_deleted', () => {
    const tombstone = { id: create.id, owner: OWNER, reason: 'cancelled' as const, at: NOW - 1 };
    expect(planEnqueue(edit, [], { id: create.id, tombstone }, ctx)).toMatchObject({
      kind: 'reject',
      code: 'target_deleted',
    });
  });

  it('C vanished without a known receipt: the edit waits as an intent, recovered at flush', () => {
    const { row, outcome } = written(planEnqueue(edit, [], { id: create.id }, ctx));
    expect(outcome).toBe('intent');
    expect(row).toMatchObject({ successorOf: create.id, targetId: create.targetId });
  });

  it('a quarantined value shaped like an intent is neither merged nor waited on: the edit waits on C (G7)', () => {
    const sending = claimedBy(create, OTHER, 1);
    const quarantined = {
      ...intentRow(create.id, { id: 'notes-0000000000000000000bad01', payload: undefined }),
      successorOf: undefined,
      state: 'blocked',
      blockedCode: 'row_corrupt',
      raw: { id: 'notes-0000000000000000000bad01' },
    } as OutboxRow;
    const { row, outcome, plan } = written(
      planEnqueue(
        edit,
        [observe(sending), observe(quarantined)],
        { id: create.id, row: observe(sending) },
        ctx,
      ),
    );
    expect(outcome).toBe('intent');
    expect(row).toMatchObject({ savedAt: NOW, successorOf: create.id });
    expect(plan.delete).toEqual([]);
  });

  it('a second edit merges into the earlier intent, keeping its place and link', () => {
    const sending = claimedBy(create, OTHER, 1);
    const first = intentRow(create.id, { payload: { title: 'one', body: 'b' } });
    const { row, plan } = written(
      planEnqueue(
        { ...edit, payload: { title: 'two' } },
        [observe(sending), observe(first)],
        { id: create.id, row: observe(sending) },
        ctx,
      ),
    );
    expect(row).toMatchObject({
      id: NEW_ID,
      savedAt: first.savedAt,
      successorOf: create.id,
      payload: { title: 'two', body: 'b' },
    });
    expect(row).not.toHaveProperty('request');
    expect(plan.delete).toEqual([first.id]);
    expect(plan.tombstones?.[0]).toMatchObject({ id: first.id, reason: 'coalesced', into: NEW_ID });
  });
});

describe('enqueue rejects what it cannot send', () => {
  it.each([
    {
      name: 'a create that names a targetId',
      intent: update({ kind: 'create', targetId: 'n_1' }),
      code: 'invalid_intent',
    },
    {
      name: 'an update without a targetId',
      intent: update({ targetId: undefined }),
      code: 'invalid_intent',
    },
    {
      name: 'a body larger than maxRowBytes',
      intent: update({ payload: { body: 'x'.repeat(2_000) } }),
      code: 'row_too_large',
    },
  ])('$name is rejected with $code', ({ intent, code }) => {
    const planned = planEnqueue(intent, [] as Observed[], undefined, ctx);
    expect(planned).toMatchObject({ kind: 'reject', code });
  });

  // `fetch` refuses such a header on every attempt: stored, the row would be retried for ever.
  it.each<{ name: string; headers: Record<string, string>; idempotencyHeader?: string }>([
    { name: 'a NUL in a value', headers: { 'x-tag': 'a\u0000b' } },
    { name: 'CR LF in a value', headers: { 'x-tag': 'one\r\nx-injected: two' } },
    { name: 'a character past U+00FF', headers: { 'x-tag': 'caf\u00e9 \u2603' } },
    { name: 'a name that is no token', headers: { 'x tag': 'a' } },
    { name: 'an idempotency header that is no name', headers: {}, idempotencyHeader: 'key:' },
  ])(
    'a handler header with $name is refused with invalid_intent',
    ({ headers, idempotencyHeader }) => {
      const handler = {
        ...notes,
        toRequest: (info: Parameters<typeof notes.toRequest>[0]) => ({
          ...notes.toRequest(info),
          headers: { ...notes.toRequest(info).headers, ...headers },
          ...(idempotencyHeader === undefined ? {} : { idempotencyHeader }),
        }),
      };
      const planned = planEnqueue(update(), [] as Observed[], undefined, { ...ctx, handler });
      expect(planned).toMatchObject({ kind: 'reject', code: 'invalid_intent' });
      expect(planned.kind === 'reject' && planned.message).toMatch(
        /cannot be sent|not a header name/,
      );
    },
  );

  it('a handler header of tabs and Latin-1 text is kept as it is', () => {
    const handler = {
      ...notes,
      toRequest: (info: Parameters<typeof notes.toRequest>[0]) => ({
        ...notes.toRequest(info),
        headers: { ...notes.toRequest(info).headers, 'X-Tag': 'caf\u00e9\tok' },
      }),
    };
    const planned = planEnqueue(update(), [] as Observed[], undefined, { ...ctx, handler });
    if (planned.kind !== 'write') throw new Error(`expected a plan, got ${planned.kind}`);
    expect((planned.plan.put![0] as OutboxRow).request?.headers['x-tag']).toBe('caf\u00e9\tok');
  });
});
