import { describe, expect, it } from 'vitest';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import type { Receipt } from '../../shared/model/store.ts';
import { planSuccessorRebase } from '../../shared/plan/successor-rebase.ts';
import {
  claimedBy,
  deferred,
  intentRow,
  ME,
  notes,
  observe,
  receiptOf,
  requestFor,
  updateRow,
} from './fixtures.ts';

const predecessor = claimedBy(updateRow({ baseRevision: 3 }), ME, 1);
const SUCCESSOR_ID = 'notes-000000000000000000000002';
const successor = (overrides: Partial<OutboxRow> & Record<string, unknown> = {}) =>
  updateRow({
    id: SUCCESSOR_ID,
    payload: { title: 'second' },
    baseRevision: 3,
    successorOf: predecessor.id,
    ...overrides,
  });
const receipt: Receipt = receiptOf(predecessor, 'n_1', 4);

/**
 * SPEC §6, G4: an edit made while its predecessor was in flight was made from the same revision;
 * on the predecessor's receipt it is rebuilt on the revision that receipt produced, keeping its
 * id and key (no server has seen them yet). One case per rule of `planSuccessorRebase`.
 */
describe("rebasing waiting successors on their predecessor's receipt", () => {
  it('rebuilds a never-sent successor made from the same revision on the new one, same key', () => {
    const row = successor();
    const plan = planSuccessorRebase([observe(row)], predecessor, receipt, notes);
    expect(plan.expected).toEqual([{ id: row.id, row }]);
    expect(plan.put).toEqual([
      {
        ...row,
        baseRevision: 4,
        request: requestFor(
          { kind: 'update', targetId: 'n_1', payload: { title: 'second' }, baseRevision: 4 },
          row.request!.requestId,
        ),
      },
    ]);
    expect(plan.put[0]!.request!.headers['if-match']).toBe('"4"');
  });

  it.each([
    {
      rule: 'a row waiting on another predecessor',
      row: successor({ successorOf: 'notes-00000000000000000000000z' }),
    },
    {
      rule: 'an intent row (no request yet, §8)',
      row: intentRow('notes-00000000000000000000000c', { successorOf: predecessor.id }),
    },
    {
      rule: 'a successor that was attempted: its outcome may be known to a server',
      row: deferred(successor()),
    },
    {
      rule: 'a successor made from another revision: a real conflict to find',
      row: successor({ baseRevision: 2 }),
    },
    {
      rule: 'a successor that is not queued (blocked)',
      row: { ...successor(), state: 'blocked', blockedCode: 'http_422' },
    },
  ])('leaves alone $rule', ({ row }) => {
    expect(planSuccessorRebase([observe(row)], predecessor, receipt, notes)).toEqual({
      expected: [],
      put: [],
    });
  });

  it.each<{
    rule: string;
    receipt: Receipt;
    predecessor: OutboxRow;
    handler: CollectionHandler | undefined;
  }>([
    {
      rule: 'the receipt names no revision',
      receipt: { ...receipt, revision: undefined } as Receipt,
      predecessor,
      handler: notes,
    },
    {
      rule: 'the predecessor had no base revision',
      receipt,
      predecessor: { ...predecessor, baseRevision: null },
      handler: notes,
    },
    { rule: 'no handler knows the collection', receipt, predecessor, handler: undefined },
  ])('rebases nothing when $rule', ({ receipt: r, predecessor: p, handler }) => {
    expect(planSuccessorRebase([observe(successor())], p, r, handler)).toEqual({
      expected: [],
      put: [],
    });
  });

  it('leaves a successor alone when its handler cannot build the rebased request', () => {
    const throwing: CollectionHandler = {
      ...notes,
      toRequest: () => {
        throw new Error('no');
      },
    };
    expect(planSuccessorRebase([observe(successor())], predecessor, receipt, throwing)).toEqual({
      expected: [],
      put: [],
    });
  });
});
