import { describe, expect, it } from 'vitest';
import {
  checkConflictFacts,
  checkMerged,
  checkReceiptFacts,
} from '../../shared/plan/hook-values.ts';

/** A hook's return value is checked before anything is planned with it (SPEC §11, G7). */
describe('what the collection hooks return', () => {
  const update = {
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    baseRevision: 1,
    payload: { a: 1 },
  };
  const create = {
    collection: 'notes',
    kind: 'create',
    targetId: 'pending:c1',
    baseRevision: null,
    payload: { a: 1 },
  };

  it.each([
    {
      name: 'an update merged into an update',
      earlier: update,
      merged: { kind: 'update', payload: { a: 2 } },
    },
    {
      name: 'a create merged into a create',
      earlier: create,
      merged: { kind: 'create', payload: { b: 2 } },
    },
    { name: 'an update merged into a delete', earlier: update, merged: { kind: 'delete' } },
  ])('takes $name', ({ earlier, merged }) => {
    expect(() => checkMerged(earlier, merged as never, undefined)).not.toThrow();
  });

  it.each([
    {
      name: 'a create turned into an update',
      earlier: create,
      merged: { kind: 'update', payload: {} },
      kinds: undefined,
    },
    {
      name: 'an update turned into a create',
      earlier: update,
      merged: { kind: 'create', payload: {} },
      kinds: undefined,
    },
    {
      name: 'a kind the collection does not take',
      earlier: update,
      merged: { kind: 'archive' },
      kinds: ['create', 'update'],
    },
    { name: 'no kind', earlier: update, merged: { payload: {} }, kinds: undefined },
    {
      name: 'a payload holding undefined',
      earlier: update,
      merged: { kind: 'update', payload: { a: undefined } },
      kinds: undefined,
    },
    {
      name: 'a payload holding NaN',
      earlier: update,
      merged: { kind: 'update', payload: { a: Number.NaN } },
      kinds: undefined,
    },
  ])('refuses $name', ({ earlier, merged, kinds }) => {
    expect(() => checkMerged(earlier, merged as never, kinds)).toThrow(/coalesce/);
  });

  it.each([
    { facts: {}, ok: true },
    { facts: { serverId: 'n_1', revision: 2 }, ok: true },
    { facts: { serverId: 7 }, ok: false },
    { facts: { revision: '2' }, ok: false },
    { facts: { revision: Number.POSITIVE_INFINITY }, ok: false },
  ])('readReceipt $facts: ok $ok', ({ facts, ok }) => {
    const check = () => checkReceiptFacts(facts as never);
    if (ok) expect(check()).toEqual(facts);
    else expect(check).toThrow(/readReceipt/);
  });

  it.each([
    { facts: { currentRevision: 3 }, read: { currentRevision: 3 } },
    { facts: { currentRevision: null }, read: { currentRevision: null } },
    { facts: { currentRevision: undefined }, read: { currentRevision: null } },
    {
      facts: { currentRevision: 3, remote: { revision: 3, value: {} } },
      read: { currentRevision: 3, remote: { revision: 3, value: {} } },
    },
  ])('readConflict $facts reads as $read', ({ facts, read }) => {
    expect(checkConflictFacts(facts as never)).toEqual(read);
  });

  it.each([
    { currentRevision: Number.NaN },
    { currentRevision: '2' },
    { currentRevision: 2, remote: { value: {} } },
    { currentRevision: 2, history: { revision: 'x' } },
  ])('readConflict %o is refused', (facts) => {
    expect(() => checkConflictFacts(facts as never)).toThrow(/readConflict/);
  });
});
