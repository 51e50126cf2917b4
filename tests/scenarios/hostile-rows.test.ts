import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { cyclic, nested } from '../support/hostile.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';

/**
 * G7: a stored value the codec cannot handle — cyclic, nested too deep — is quarantined with its
 * raw value, shows in `rows()` with its reason, and never stops the owner's other rows. And
 * `maxRowBytes` bounds the whole stored row, not only the request body (SPEC §14).
 */
describe.each(STORE_KINDS)('hostile stored values on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  /** A row of the owner written straight into the store, as a corrupt writer would. */
  async function plant(holder: Awaited<ReturnType<World['holder']>>, id: string, payload: unknown) {
    const raw = {
      v: 1,
      id,
      owner: OWNER,
      collection: 'notes',
      kind: 'create',
      targetId: `pending:${id}`,
      savedAt: world.clock.now() - 10,
      state: 'queued',
      payload,
    };
    expect(
      await holder.store.replace({
        owner: OWNER,
        expected: [{ id, row: null }],
        put: [raw],
        reason: 'test',
      }),
    ).toBe('committed');
    return raw;
  }

  it.each([
    { shape: 'a cyclic payload', payload: cyclic, issue: 'value_cyclic' },
    {
      shape: 'a payload nested 1,500 levels',
      payload: () => nested(1500),
      issue: 'value_too_deep',
    },
  ])(
    '$shape is quarantined with its raw value; the other rows go once each',
    async ({ payload, issue }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const before = await a.api.enqueue(createNote({ title: 'before' }));
      const raw = await plant(a, 'notes-0000000000000000000bad01', payload());
      const after = await a.api.enqueue(createNote({ title: 'after' }));

      // Reads do not fail on it, before and after it is quarantined.
      expect((await a.api.rows()).map((v) => v.id)).toEqual([before.id, after.id]);
      const report = await a.api.flush({ force: true });
      expect(report.succeeded).toBe(2);
      expect(world.server.effects.map((e) => [e.method, e.key])).toEqual([
        ['POST', before.requestId],
        ['POST', after.requestId],
      ]);

      const views = await a.api.rows();
      expect(views).toHaveLength(1);
      const [quarantined] = views;
      expect(quarantined).toMatchObject({ id: raw.id, status: 'blocked' });
      expect(quarantined!.row).toMatchObject({
        blockedCode: 'row_corrupt',
        blockedDetail: expect.stringContaining(issue),
      });
      const kept = (quarantined!.row as OutboxRow & { raw: typeof raw }).raw;
      expect(kept.id).toBe(raw.id);
      expect(Object.keys(kept.payload as object)).toEqual(Object.keys(raw.payload as object));
      expect(await a.api.stats()).toMatchObject({ total: 1, counts: { blocked: 1 } });

      // It stays quarantined: later flushes neither send nor rewrite it, and new edits still go.
      await a.api.flush({ force: true });
      await a.api.enqueue(createNote({ title: 'later' }));
      await a.api.flush({ force: true });
      expect(world.server.effects).toHaveLength(3);
      expect((await a.api.rows()).map((v) => v.id)).toEqual([raw.id]);
      // `discard` is how the app lets it go (G1).
      await a.api.discard(raw.id);
      expect(await a.api.rows()).toEqual([]);
    },
  );

  it.each([
    { type: 'a number', key: () => 42 },
    { type: 'a Date', key: () => new Date(1_700_000_000_000) },
    { type: 'an array', key: () => ['legacy', 7] },
    { type: 'a binary', key: () => new Uint8Array([1, 2, 3]).buffer },
  ])(
    'a corrupt value under $type key is quarantined with its raw value and never blocks its record (G7)',
    async ({ key }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const { id: targetId } = world.server.seed(OWNER, { title: 'zero' });
      const raw = {
        id: key(),
        owner: OWNER,
        collection: 'notes',
        targetId,
        kind: 'update',
        savedAt: world.clock.now() - 10,
        state: 'queued',
      };
      expect(
        await a.store.replace({ owner: OWNER, expected: [], put: [raw], reason: 'test' }),
      ).toBe('committed');
      // Its record's edits enqueue and go, flush after flush.
      for (const title of ['one', 'two']) {
        const edit = await a.api.enqueue(updateNote(targetId, { title }));
        expect((await a.api.flush({ force: true })).succeeded).toBe(1);
        expect(world.server.effectsFor(edit.requestId!)).toBe(1);
      }
      const views = await a.api.rows();
      expect(views).toHaveLength(1);
      expect(views[0]).toMatchObject({ status: 'blocked', row: { blockedCode: 'row_corrupt' } });
      expect((views[0]!.row as OutboxRow & { raw: typeof raw }).raw).toEqual(raw);
      expect(await a.api.stats()).toMatchObject({ total: 1, counts: { blocked: 1 } });
    },
  );

  it.each([
    {
      what: 'a delete with a 300 KiB payload',
      input: () => deleteNote('n_1'),
      extra: { payload: { blob: 'x'.repeat(300_000) } },
    },
    {
      what: 'a create with a 300 KiB meta',
      input: () => createNote({ title: 'x' }),
      extra: { meta: { blob: 'x'.repeat(300_000) } },
    },
    {
      what: 'an update with a 300 KiB meta',
      input: () => updateNote('n_1', { title: 'x' }),
      extra: { meta: 'x'.repeat(300_000) },
    },
  ])('refuses $what: maxRowBytes counts the whole row', async ({ input, extra }) => {
    world = await World.create(kind);
    const a = await world.holder('A');
    await expect(a.api.enqueue({ ...input(), ...extra } as never)).rejects.toMatchObject({
      code: 'row_too_large',
    });
    expect(await world.rows()).toEqual([]);
  });

  it('refuses an intent row (an edit of a pending create) over maxRowBytes', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const create = await a.api.enqueue(createNote({ title: 'x' }));
    await world.holdInFlight(a, create.id);
    await expect(
      a.api.enqueue({ ...updateNote(create.targetId, { blob: 'x'.repeat(300_000) }) }),
    ).rejects.toMatchObject({ code: 'row_too_large' });
    expect((await world.rows()).map((r) => r.id)).toEqual([create.id]);
  });
});
