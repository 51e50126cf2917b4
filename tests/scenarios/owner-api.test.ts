import { afterEach, describe, expect, it } from 'vitest';
import { OutboxError } from '../../shared/model/errors.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';

/** The owner API of SPEC §13 on the core: typed errors (G7), idempotent enqueue (§9), statuses (§2). */
describe.each(STORE_KINDS)('the owner API on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it.each([
    { input: { collection: 'notes', kind: 'update' }, code: 'invalid_intent' },
    { input: { collection: '', kind: 'create' }, code: 'invalid_intent' },
    { input: { collection: 'notes', kind: 'create', extra: 1 }, code: 'invalid_intent' },
    { input: { collection: 'n'.repeat(101), kind: 'create' }, code: 'invalid_intent' },
    { input: { collection: 'notes', kind: 'k'.repeat(41) }, code: 'invalid_intent' },
    { input: { collection: 'notes', kind: 'update', targetId: '' }, code: 'invalid_intent' },
    {
      input: { collection: 'notes', kind: 'update', targetId: 't'.repeat(201) },
      code: 'invalid_intent',
    },
    {
      input: { collection: 'notes', kind: 'update', targetId: 'n_1', baseRevision: 1.5 },
      code: 'invalid_intent',
    },
    {
      input: { collection: 'notes', kind: 'update', targetId: 'n_1', baseRevision: -1 },
      code: 'invalid_intent',
    },
    {
      input: { collection: 'notes', kind: 'update', targetId: 'n_1', baseRevision: 2 ** 53 },
      code: 'invalid_intent',
    },
    { input: { collection: 'notes', kind: 'create', owner: '' }, code: 'invalid_intent' },
    { input: { collection: 'notes', kind: 'create', id: 'short' }, code: 'invalid_id' },
    { input: { collection: 'notes', kind: 'create', id: 'x'.repeat(81) }, code: 'invalid_id' },
    { input: { collection: 'notes', kind: 'create', id: 'has space in it' }, code: 'invalid_id' },
    {
      input: { collection: 'notes', kind: 'create', owner: 'someone-else' },
      code: 'owner_mismatch',
    },
    { input: { collection: 'tasks', kind: 'create' }, code: 'unknown_collection' },
    { input: { collection: 'notes', kind: 'create', targetId: 'n_1' }, code: 'invalid_intent' },
    {
      input: createNote({ body: 'x'.repeat(300_000) }),
      code: 'row_too_large',
    },
  ])('rejects $code input with a typed error and stores nothing', async ({ input, code }) => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const error = await a.api.enqueue(input as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutboxError);
    expect(error).toMatchObject({ code });
    expect((error as OutboxError).hint.length).toBeGreaterThan(10);
    expect(await world.rows()).toEqual([]);
  });

  it('says in each issue which field is wrong and what it expects', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const error = await a.api
      .enqueue({
        collection: '',
        kind: 'update',
        targetId: 'n_1',
        baseRevision: -1,
      } as never)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'invalid_intent',
      details: {
        issues: [
          { path: 'collection', message: 'expected a string of 1 to 100 characters' },
          { path: 'baseRevision', message: 'expected a non-negative integer' },
        ],
      },
    });
  });

  it('answers a repeated enqueue id with the existing outcome: queued, settled, or coalesced', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const record = world.server.seed(OWNER, { title: 'a' });
    const first = await a.api.enqueue({
      id: 'edit-000000001',
      collection: 'notes',
      kind: 'update',
      targetId: record.id,
      payload: { title: 'b' },
    });
    const again = await a.api.enqueue({
      id: 'edit-000000001',
      collection: 'notes',
      kind: 'update',
      targetId: record.id,
      payload: { title: 'b' },
    });
    expect(again).toMatchObject({ id: first.id, requestId: first.requestId, outcome: 'existing' });
    const merged = await a.api.enqueue({
      id: 'edit-000000002',
      collection: 'notes',
      kind: 'update',
      targetId: record.id,
      payload: { body: 'c' },
    });
    expect(merged.outcome).toBe('coalesced');
    await expect(
      a.api.enqueue({
        id: 'edit-000000001',
        collection: 'notes',
        kind: 'update',
        targetId: record.id,
        payload: {},
      }),
    ).resolves.toMatchObject({ outcome: 'existing' });
    await a.api.flush();
    await expect(
      a.api.enqueue({
        id: 'edit-000000002',
        collection: 'notes',
        kind: 'update',
        targetId: record.id,
        payload: {},
      }),
    ).resolves.toMatchObject({ outcome: 'existing', requestId: merged.requestId });
    expect(world.server.effects).toHaveLength(1);
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'b', body: 'c' });
  });

  it('cancels a never-sent create and its delete: nothing is sent and the target counts as deleted', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const c = await a.api.enqueue(createNote({ title: 'x' }));
    const u = await a.api.enqueue(updateNote(c.targetId, { body: 'y' }));
    expect(u.outcome).toBe('coalesced');
    const d = await a.api.enqueue(deleteNote(c.targetId));
    expect(d.outcome).toBe('cancelled');
    expect(await world.rows()).toEqual([]);
    await a.api.flush();
    expect(world.server.seen).toEqual([]);
    await expect(a.api.enqueue(updateNote(c.targetId, {}))).rejects.toMatchObject({
      code: 'target_deleted',
    });
  });

  it('quarantines a stored value that no longer parses, keeps its raw value, and sends the rest', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const good = await a.api.enqueue(createNote({ title: 'ok' }));
    const bad = { id: 'broken-row-1', owner: OWNER, savedAt: 1, state: 42, collection: 'notes' };
    await a.store.replace({
      owner: OWNER,
      expected: [{ id: bad.id, row: null }],
      put: [bad],
      reason: 'test',
    });
    const report = await a.api.flush();
    expect(report.succeeded).toBe(1);
    expect(world.server.seen.map((s) => s.key)).toEqual([good.requestId]);
    expect(await world.row(bad.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'row_corrupt',
      raw: bad,
    });
    expect((await a.api.row(bad.id))?.status).toBe('blocked');
    await expect(a.api.retry(bad.id)).rejects.toMatchObject({ code: 'not_blocked' });
    await a.api.discard(bad.id);
    expect(await world.rows()).toEqual([]);
  });

  it('holds rows on 401 until resumeHeld, blocks a 4xx with its reason, and retries or discards it', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const record = world.server.seed(OWNER, { title: 'a' });
    const held = await a.api.enqueue(createNote({ title: 'h' }));
    world.server.inject('unauthorized');
    await a.api.flush();
    expect((await a.api.row(held.id))?.status).toBe('held');
    await a.api.flush({ force: true });
    expect(world.server.effects).toEqual([]);
    expect(await a.api.resumeHeld()).toBe(1);
    await a.api.flush();
    expect(world.server.effectsFor(held.requestId!)).toBe(1);

    const gone = await a.api.enqueue(updateNote('n_404', { title: 'x' }));
    await a.api.flush();
    expect(await world.row(gone.id)).toMatchObject({ state: 'blocked', blockedCode: 'http_404' });
    expect((await world.row(gone.id))?.blockedDetail).toContain('not-found');
    await expect(a.api.retry(record.id)).rejects.toMatchObject({ code: 'not_found' });
    await a.api.retry(gone.id);
    expect((await a.api.row(gone.id))?.status).toBe('queued');
    await a.api.flush();
    await a.api.discard(gone.id);
    expect(await world.rows()).toEqual([]);
  });

  it('derives every display status and counts them in stats', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const r1 = world.server.seed(OWNER, {});
    const r2 = world.server.seed(OWNER, {});
    const inFlight = await a.api.enqueue(updateNote(r1.id, { a: 1 }));
    const create = await a.api.enqueue(createNote({ a: 1 }));
    a.transport.close();
    const flush = a.api.flush();
    await world.until(
      () => world.log.filter((l) => l.startsWith('claim:')).length === 2,
      'both claimed',
    );
    const waiting = await a.api.enqueue(updateNote(r1.id, { a: 2 }));
    const intent = await a.api.enqueue(updateNote(create.targetId, { a: 2 }));
    const queued = await a.api.enqueue(updateNote(r2.id, { a: 1 }));
    const statuses = Object.fromEntries((await a.api.rows()).map((v) => [v.id, v.status]));
    expect(statuses).toEqual({
      [inFlight.id]: 'sending',
      [create.id]: 'sending',
      [waiting.id]: 'waiting',
      [intent.id]: 'intent',
      [queued.id]: 'queued',
    });
    const stats = await a.api.stats();
    expect(stats.total).toBe(5);
    expect(stats.counts).toMatchObject({
      sending: 2,
      waiting: 1,
      intent: 1,
      queued: 1,
      held: 0,
      blocked: 0,
    });
    expect((await a.api.rows({ targetId: r1.id })).map((v) => v.id)).toEqual([
      inFlight.id,
      waiting.id,
    ]);
    world.server.inject('fail503', 'fail503');
    a.transport.open();
    await flush;
    expect((await a.api.row(inFlight.id))?.status).toBe('deferred');
  });

  it('reports what still waits after a flush and the earliest time to wake up for it', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const r1 = world.server.seed(OWNER, {});
    const r2 = world.server.seed(OWNER, {});
    await a.api.enqueue(updateNote(r1.id, { a: 1 }));
    world.server.inject('fail503');
    const first = await a.api.flush();
    expect(first).toMatchObject({
      transient: 1,
      remaining: 1,
      nextAttemptAt: world.clock.now() + 1000,
    });
    await a.api.enqueue(updateNote(r2.id, { a: 1 }));
    const second = await a.api.flush();
    expect(second).toMatchObject({
      succeeded: 1,
      remaining: 1,
      nextAttemptAt: first.nextAttemptAt,
    });
    world.clock.advance(1000);
    expect(await a.api.flush()).toMatchObject({ succeeded: 1, remaining: 0, nextAttemptAt: null });
  });

  it('answers a retried delete with its existing outcome instead of target_deleted', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const record = world.server.seed(OWNER, { title: 'a' });
    const intent = {
      id: 'delete-00000001',
      collection: 'notes',
      kind: 'delete',
      targetId: record.id,
    };
    const first = await a.api.enqueue(intent);
    await expect(a.api.enqueue(intent)).resolves.toMatchObject({
      id: first.id,
      outcome: 'existing',
    });
    await a.api.flush();
    await expect(a.api.enqueue(intent)).resolves.toMatchObject({
      id: first.id,
      outcome: 'existing',
    });
    expect(world.server.effects.map((e) => e.method)).toEqual(['DELETE']);
  });
});
