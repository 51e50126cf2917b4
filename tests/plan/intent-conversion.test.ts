import { describe, expect, it } from 'vitest';
import { fingerprintOf } from '../../shared/model/digest.ts';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import {
  type ConversionContext,
  planIntentConversion,
} from '../../shared/plan/intent-conversion.ts';
import {
  createRow,
  intentRow,
  NOW,
  notes,
  OWNER,
  observe,
  receiptOf,
  without,
} from './fixtures.ts';

const create = createRow();
const receipt = receiptOf(create, 'n_77', 1);

function context(): ConversionContext {
  let n = 0;
  return {
    now: NOW,
    owner: OWNER,
    newId: (prefix) => `${prefix}-${(++n).toString(16).padStart(24, '0')}`,
  };
}

const FIRST_NEW_ID = 'notes-000000000000000000000001';
const SECOND_NEW_ID = 'notes-000000000000000000000002';

/** One update intent over the pending create, with app metadata. */
const intent = intentRow(create.id, {
  id: 'notes-0000000000000000000000i1',
  payload: { title: 'edited' },
  savedAt: NOW - 700,
  meta: { origin: 'editor', tags: ['x'] },
});

function convertOne(row: OutboxRow = intent, handler: CollectionHandler | undefined = notes) {
  return planIntentConversion([observe(row)], create, receipt, handler, context());
}

/** SPEC §8: once the create's receipt is known, its intents become real requests. */
describe('converting an intent once its create has a receipt (SPEC §8)', () => {
  const plan = convertOne();
  const converted = plan.put[0]!;

  it.each([
    {
      what: 'targets the server id from the receipt',
      actual: () => converted.targetId,
      expected: 'n_77',
    },
    {
      what: 'is made from the revision in the receipt',
      actual: () => [converted.baseRevision, converted.request?.headers['if-match']],
      expected: [1, '"1"'],
    },
    {
      what: 'gets a new request id, which is its row id and its idempotency key',
      actual: () => [
        converted.id,
        converted.request?.requestId,
        converted.request?.headers['idempotency-key'],
      ],
      expected: [FIRST_NEW_ID, FIRST_NEW_ID, `"${FIRST_NEW_ID}"`],
    },
    {
      what: 'gets the fingerprint of its own bytes',
      actual: () => converted.request?.fingerprint,
      expected: fingerprintOf(
        { method: 'PATCH', url: '/api/notes/n_77', headers: {}, body: '{"title":"edited"}' },
        1,
      ),
    },
    {
      what: 'keeps its queue place (savedAt)',
      actual: () => converted.savedAt,
      expected: intent.savedAt,
    },
    { what: 'keeps the app meta verbatim', actual: () => converted.meta, expected: intent.meta },
    {
      what: 'keeps its successorOf link',
      actual: () => converted.successorOf,
      expected: create.id,
    },
    { what: 'is queued to be sent', actual: () => converted.state, expected: 'queued' },
    {
      what: 'sends the payload as given',
      actual: () => [converted.kind, converted.request?.method, converted.request?.body],
      expected: ['update', 'PATCH', '{"title":"edited"}'],
    },
  ])('the converted row $what', ({ actual, expected }) => {
    expect(actual()).toEqual(expected);
  });

  it('the intent row is deleted and tombstoned as converted, expected exactly as observed', () => {
    expect(plan.expected).toEqual([{ id: intent.id, row: intent }]);
    expect(plan.delete).toEqual([intent.id]);
    expect(plan.tombstones).toEqual([
      { id: intent.id, owner: OWNER, reason: 'converted', into: FIRST_NEW_ID, at: NOW },
    ]);
    expect(plan.converted).toEqual([{ intentId: intent.id, into: FIRST_NEW_ID }]);
    expect(plan.blocked).toEqual([]);
  });

  it('a delete intent becomes a DELETE of the server id at the receipt revision', () => {
    const del = intentRow(create.id, { kind: 'delete', payload: undefined });
    expect(convertOne(del).put[0]?.request).toMatchObject({
      method: 'DELETE',
      url: '/api/notes/n_77',
      body: null,
      headers: { 'if-match': '"1"' },
    });
  });
});

describe('links between intents are carried over to the new ids (G4)', () => {
  const first = intentRow(create.id, { id: 'notes-0000000000000000000000i1', savedAt: NOW - 700 });
  const second = intentRow(create.id, {
    id: 'notes-0000000000000000000000i2',
    savedAt: NOW - 600,
    successorOf: first.id,
    kind: 'delete',
  });
  // Observed in reverse order on purpose: conversion goes by savedAt.
  const plan = planIntentConversion(
    [observe(second), observe(first)],
    create,
    receipt,
    notes,
    context(),
  );

  it.each([
    {
      which: 'the first intent',
      index: 0,
      id: FIRST_NEW_ID,
      successorOf: create.id,
      was: first.id,
    },
    {
      which: 'the second intent',
      index: 1,
      id: SECOND_NEW_ID,
      successorOf: FIRST_NEW_ID,
      was: second.id,
    },
  ])(
    '$which is converted in savedAt order and linked to its converted predecessor',
    ({ index, id, successorOf, was }) => {
      expect(plan.put[index]).toMatchObject({ id, successorOf });
      expect(plan.converted[index]).toEqual({ intentId: was, into: id });
    },
  );
});

/** SPEC §8: "No handler, or prepareSuccessor throws → blocked with successor_unprepared". */
describe('an intent that cannot be prepared is blocked with its original kept', () => {
  const throwing: CollectionHandler = {
    ...notes,
    prepareSuccessor: () => {
      throw new Error('cannot rebase this edit');
    },
  };

  it.each([
    {
      name: 'the handler throws',
      handler: throwing,
      detail: 'cannot rebase this edit',
      theReceipt: receipt,
    },
    {
      name: 'there is no handler',
      handler: undefined,
      detail: 'no handler for collection "notes"',
      theReceipt: receipt,
    },
    {
      name: 'the receipt names no server id',
      handler: notes,
      detail: 'the receipt names no server id',
      theReceipt: without(receipt, 'serverId'),
    },
  ])('when $name', ({ handler, detail, theReceipt }) => {
    const plan = planIntentConversion([observe(intent)], create, theReceipt, handler, context());
    expect(plan.put).toEqual([
      {
        ...intent,
        state: 'blocked',
        blockedAt: NOW,
        blockedCode: 'successor_unprepared',
        blockedDetail: detail,
      },
    ]);
    expect(plan.delete).toEqual([]);
    expect(plan.tombstones).toEqual([]);
    expect(plan.blocked).toEqual([{ intentId: intent.id, detail }]);
  });
});

describe("a handler's prepareSuccessor builds the real intent", () => {
  it('is given the intent, the create and the receipt, and its answer is what is sent', () => {
    const seen: unknown[] = [];
    const handler: CollectionHandler = {
      ...notes,
      prepareSuccessor: (input) => {
        seen.push(input);
        return {
          collection: 'notes',
          kind: 'update',
          targetId: `${input.receipt.serverId}`,
          payload: { title: 'rebuilt' },
          baseRevision: 9,
        };
      },
    };
    const plan = convertOne(intent, handler);
    expect(seen).toEqual([{ intent, predecessor: create, receipt }]);
    expect(plan.put[0]).toMatchObject({
      payload: { title: 'rebuilt' },
      baseRevision: 9,
      request: { body: '{"title":"rebuilt"}', headers: { 'if-match': '"9"' } },
    });
  });
});
