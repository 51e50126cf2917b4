// @vitest-environment happy-dom
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectOutbox, type OutboxClient } from '../../client/connect.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §13: a call that could never be sent is refused at `enqueue`, with `invalid_intent` (or
 * `invalid_id`) and `details.issues` naming the field — and whatever the hint points to in
 * `details` is there. Through the real page API (the page sender, the core the worker runs)
 * with `restHandler`, which sends `If-Match` and so requires the edit's revision.
 */

let outbox: OutboxClient;

beforeEach(async () => {
  globalThis.indexedDB = new IDBFactory();
  outbox = await connectOutbox({
    swUrl: '/sw.js',
    owner: 'alice',
    periodicSync: false,
    pageSender: {
      collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
      allowedOrigins: ['http://localhost'],
      fetch: (async () => new Response(null, { status: 503 })) as typeof fetch,
      dbName: `enqueue-refusals-${Math.random()}`,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
    },
  });
});

afterEach(() => outbox.close());

async function refusal(input: unknown): Promise<OutboxError> {
  try {
    await outbox.enqueue(input as never);
  } catch (error) {
    if (error instanceof OutboxError) return error;
    throw error;
  }
  throw new Error('enqueue accepted it');
}

/** Every `details.<name>` a hint names, and "see details" itself, points at something there. */
function expectHintHolds(error: OutboxError) {
  for (const [, name] of error.hint.matchAll(/details\.(\w+)/g))
    expect(error.details?.[name!], `details.${name} of ${error.code}`).toBeDefined();
  if (/see details/.test(error.hint)) expect(Object.keys(error.details ?? {})).not.toEqual([]);
}

describe('enqueue refuses what could never be sent, naming the field', () => {
  it.each<{ mistake: string; input: unknown; code?: string; path: string; says: RegExp }>([
    {
      mistake: 'an update of a server id without its baseRevision',
      input: { collection: 'notes', kind: 'update', targetId: 'n1', payload: { title: 'x' } },
      path: 'baseRevision',
      says: /revision it was made from/,
    },
    {
      mistake: 'a delete of a server id with a null baseRevision',
      input: { collection: 'notes', kind: 'delete', targetId: 'n1', baseRevision: null },
      path: 'baseRevision',
      says: /If-Match/,
    },
    {
      mistake: 'a mistyped kind',
      input: { collection: 'notes', kind: 'insert', payload: { title: 'x' } },
      path: 'kind',
      says: /expected one of create, update, delete/,
    },
    {
      mistake: 'a create that names a target',
      input: { collection: 'notes', kind: 'create', targetId: 'n1' },
      path: 'targetId',
      says: /takes no targetId/,
    },
    {
      mistake: 'an update with no target',
      input: { collection: 'notes', kind: 'update', payload: {} },
      path: 'targetId',
      says: /needs the id of its record/,
    },
    {
      mistake: 'a field of the wrong type',
      input: { collection: 'notes', kind: 'update', targetId: 'n1', baseRevision: 'three' },
      path: 'baseRevision',
      says: /./,
    },
    { mistake: 'no object at all', input: 'notes', path: '(root)', says: /expected an object/ },
    {
      mistake: 'an id of the wrong form',
      input: { collection: 'notes', kind: 'create', id: 'x' },
      code: 'invalid_id',
      path: 'id',
      says: /./,
    },
  ])('$mistake', async ({ input, code = 'invalid_intent', path, says }) => {
    const error = await refusal(input);
    expect(error.code).toBe(code);
    expect(error.details?.issues).toEqual(
      expect.arrayContaining([{ path, message: expect.stringMatching(says) }]),
    );
    expectHintHolds(error);
  });

  it('an edit of a pending create needs no revision: it takes the create’s at conversion', async () => {
    const created = await outbox.enqueue({ collection: 'notes', kind: 'create', payload: {} });
    const edit = await outbox.enqueue({
      collection: 'notes',
      kind: 'update',
      targetId: created.targetId,
      payload: { title: 'x' },
    });
    expect(edit.outcome).toMatch(/coalesced|intent|successor/);
  });

  it('an edit of a server id with its revision is queued', async () => {
    const edit = await outbox.enqueue({
      collection: 'notes',
      kind: 'update',
      targetId: 'n1',
      baseRevision: 3,
      payload: { title: 'x' },
    });
    expect(edit.outcome).toBe('queued');
  });
});
