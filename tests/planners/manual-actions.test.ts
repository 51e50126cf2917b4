import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { planDiscard, planResumeHeld, planRetry } from '../../shared/plan/manual-actions.ts';
import { createRow, deferred, intentRow, NOW, OWNER, observe, updateRow } from './fixtures.ts';

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

/** SPEC §13 `discard` (G1: an explicit app call): blocked or held rows, tombstoned. */
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
