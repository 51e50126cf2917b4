import { describe, expect, it } from 'vitest';
import type { CollectionHandler, IntentInfo } from '../../shared/model/handler.ts';
import { mergeIntents } from '../../shared/plan/merge.ts';
import { notes } from './fixtures.ts';

const intent = (kind: string, payload?: IntentInfo['payload']): IntentInfo => ({
  collection: 'notes',
  kind,
  targetId: 'n_1',
  payload,
  baseRevision: 3,
});

/** SPEC §6 default merge rules, one case per rule, then the handler's `coalesce`. */
describe('merging a later intent into an earlier one of the same record (SPEC §6)', () => {
  it.each([
    {
      rule: 'update+update → one update, payloads shallow-merged, the later wins',
      earlier: intent('update', { title: 'a', body: 'x' }),
      later: intent('update', { title: 'b' }),
      expected: { kind: 'merged', intent: { kind: 'update', payload: { title: 'b', body: 'x' } } },
    },
    {
      rule: 'create+update → one create with the merged payload',
      earlier: intent('create', { title: 'a' }),
      later: intent('update', { body: 'y' }),
      expected: { kind: 'merged', intent: { kind: 'create', payload: { title: 'a', body: 'y' } } },
    },
    {
      rule: 'create+delete → both cancelled, nothing is sent',
      earlier: intent('create', { title: 'a' }),
      later: intent('delete'),
      expected: { kind: 'cancel' },
    },
    {
      rule: 'update+delete → the delete',
      earlier: intent('update', { title: 'a' }),
      later: intent('delete'),
      expected: { kind: 'merged', intent: { kind: 'delete', payload: undefined } },
    },
    {
      rule: 'delete+update → target_deleted',
      earlier: intent('delete'),
      later: intent('update', { title: 'a' }),
      expected: { kind: 'target_deleted' },
    },
    {
      rule: 'delete+delete → target_deleted',
      earlier: intent('delete'),
      later: intent('delete'),
      expected: { kind: 'target_deleted' },
    },
    {
      rule: 'a payload that is not an object is replaced by the later one',
      earlier: intent('update', ['a']),
      later: intent('update', 'b'),
      expected: { kind: 'merged', intent: { kind: 'update', payload: 'b' } },
    },
    {
      rule: 'a later intent without payload keeps the earlier payload',
      earlier: intent('update', { title: 'a' }),
      later: intent('update'),
      expected: { kind: 'merged', intent: { kind: 'update', payload: { title: 'a' } } },
    },
    {
      rule: 'kinds without rules are kept apart, in order',
      earlier: intent('archive'),
      later: intent('update', { title: 'a' }),
      expected: { kind: 'keep_both' },
    },
  ])('$rule', ({ earlier, later, expected }) => {
    expect(mergeIntents(earlier, later, notes)).toEqual(expected);
  });

  const handler = (coalesce: NonNullable<CollectionHandler['coalesce']>): CollectionHandler => ({
    ...notes,
    coalesce,
  });

  it.each([
    {
      rule: "the handler's merge wins over the default rules",
      coalesce: () => ({ kind: 'update', payload: { merged: true } }),
      expected: { kind: 'merged', intent: { kind: 'update', payload: { merged: true } } },
    },
    {
      rule: "the handler's 'cancel' drops both",
      coalesce: () => 'cancel' as const,
      expected: { kind: 'cancel' },
    },
    {
      rule: 'a handler that returns undefined leaves the default rules to decide',
      coalesce: () => undefined,
      expected: { kind: 'merged', intent: { kind: 'update', payload: { title: 'b' } } },
    },
  ])('$rule', ({ coalesce, expected }) => {
    const merged = mergeIntents(
      intent('update', { title: 'a' }),
      intent('update', { title: 'b' }),
      handler(coalesce),
    );
    expect(merged).toEqual(expected);
  });

  it('never asks the handler to merge into a delete: the record is gone', () => {
    let asked = false;
    const result = mergeIntents(
      intent('delete'),
      intent('update', { title: 'a' }),
      handler(() => {
        asked = true;
        return 'cancel';
      }),
    );
    expect([result, asked]).toEqual([{ kind: 'target_deleted' }, false]);
  });
});
