import { describe, expect, it } from 'vitest';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import {
  type IntentShape,
  intentShapeIssues,
  revisionIssues,
} from '../../shared/plan/intent-issues.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

const rest = restHandler({ baseUrl: '/api/notes' });
const custom: Pick<CollectionHandler, 'kinds'> = { kinds: ['create', 'update', 'archive'] };

/** SPEC §13: mistakes refused at enqueue, each issue naming its field. */
describe('the shape of an intent', () => {
  it.each<{
    rule: string;
    intent: IntentShape;
    handler?: Pick<CollectionHandler, 'kinds'>;
    path?: string;
    says?: RegExp;
  }>([
    { rule: 'an update of a record', intent: { kind: 'update', targetId: 'n1' } },
    { rule: 'a create with no target', intent: { kind: 'create' } },
    {
      rule: 'a mistyped kind with no target names the kinds',
      intent: { kind: 'insert' },
      path: 'kind',
      says: /"insert" is not a kind.*create, update, delete/,
    },
    {
      rule: 'an undeclared kind naming its record is the handler’s to send',
      intent: { kind: 'archive', targetId: 'n1' },
    },
    {
      rule: 'a kind a handler does not declare names the ones it does',
      intent: { kind: 'delete', targetId: 'n1' },
      handler: custom,
      path: 'kind',
      says: /create, update, archive/,
    },
    { rule: 'a declared kind', intent: { kind: 'archive', targetId: 'n1' }, handler: custom },
    {
      rule: 'a create naming a target',
      intent: { kind: 'create', targetId: 'n1' },
      path: 'targetId',
      says: /a create takes no targetId/,
    },
    {
      rule: 'an update with no target',
      intent: { kind: 'update' },
      path: 'targetId',
      says: /needs the id of its record/,
    },
  ])('$rule', ({ intent, handler = {}, path, says }) => {
    const issues = intentShapeIssues(intent, handler);
    if (path === undefined) expect(issues).toEqual([]);
    else expect(issues).toEqual([{ path, message: expect.stringMatching(says!) }]);
  });
});

describe('the revision a handler requires', () => {
  it('restHandler requires it: it sends If-Match', () => {
    expect(rest.requiresRevision).toBe(true);
  });

  it.each<{
    rule: string;
    intent: IntentShape;
    handler?: Pick<CollectionHandler, 'requiresRevision'>;
    refused: boolean;
  }>([
    {
      rule: 'an update of a server id without one',
      intent: { kind: 'update', targetId: 'n1' },
      refused: true,
    },
    {
      rule: 'a delete of a server id with null',
      intent: { kind: 'delete', targetId: 'n1', baseRevision: null },
      refused: true,
    },
    {
      rule: 'an app-defined kind of a server id',
      intent: { kind: 'archive', targetId: 'n1' },
      refused: true,
    },
    {
      rule: 'an update with its revision',
      intent: { kind: 'update', targetId: 'n1', baseRevision: 0 },
      refused: false,
    },
    {
      rule: 'an edit of a pending create (its revision comes at conversion)',
      intent: { kind: 'update', targetId: 'pending:c1' },
      refused: false,
    },
    { rule: 'a create', intent: { kind: 'create' }, refused: false },
    {
      rule: 'a handler that does not require one',
      intent: { kind: 'update', targetId: 'n1' },
      handler: {},
      refused: false,
    },
  ])('$rule → refused: $refused', ({ intent, handler = rest, refused }) => {
    const issues = revisionIssues(intent, handler);
    expect(issues).toEqual(
      refused ? [{ path: 'baseRevision', message: expect.stringContaining('If-Match') }] : [],
    );
  });
});
