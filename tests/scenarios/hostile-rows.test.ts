import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
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

  /** Rewrites a stored row in place, as a damaging writer would; returns it before and after. */
  async function damage(
    holder: Awaited<ReturnType<World['holder']>>,
    id: string,
    change: (row: OutboxRow) => unknown,
  ) {
    const raw = (await holder.store.get(id)) as OutboxRow;
    const bad = change(raw);
    expect(
      await holder.store.replace({
        owner: OWNER,
        expected: [{ id, row: raw }],
        put: [bad],
        reason: 'test',
      }),
    ).toBe('committed');
    return { raw, bad };
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
      // The store keeps the raw value whole. The page's view carries it unless it nests too deep
      // to hand over: then the view says it was left out, and where to read it.
      const stored = (await world.row(raw.id)) as OutboxRow & { raw: typeof raw };
      const view = quarantined!.row as OutboxRow & { raw?: typeof raw; rawOmitted?: string };
      if (issue === 'value_too_deep') {
        expect(view).not.toHaveProperty('raw');
        expect(view.rawOmitted).toContain('not handed to the page');
        expect(view.rawOmitted).toContain(`key "${raw.id}"`);
      } else {
        expect(view.raw).toEqual(stored.raw);
      }
      const kept = stored.raw;
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
    { v: 'one', shape: 'a string' },
    { v: 1.5, shape: 'a fraction' },
    { v: -2, shape: 'a negative' },
    { v: null, shape: 'null' },
  ])(
    'a row whose v is $shape, with garbage claim fields, is quarantined as row_corrupt with its raw value, and discard removes it (SPEC §17)',
    async ({ v }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const id = 'notes-0000000000000000000bad02';
      const raw = {
        v,
        id,
        owner: OWNER,
        collection: 'notes',
        kind: 'create',
        targetId: `pending:${id}`,
        savedAt: world.clock.now() - 10,
        state: 'sending',
        payload: { title: 'x' },
        claim: { holderId: 42, fence: 'many', expiresAt: 'later' },
      };
      const planted = await a.store.replace({
        owner: OWNER,
        expected: [{ id, row: null }],
        put: [raw],
        reason: 'test',
      });
      expect(planted).toBe('committed');
      const other = await a.api.enqueue(createNote({ title: 'other' }));
      await a.api.flush({ force: true });

      expect(world.server.effects.map((e) => e.key)).toEqual([other.requestId]);
      const [view] = await a.api.rows();
      expect(view).toMatchObject({
        id,
        status: 'blocked',
        row: { blockedCode: 'row_corrupt', blockedDetail: expect.stringContaining('v:') },
      });
      expect((view!.row as OutboxRow & { raw: unknown }).raw).toEqual(raw);
      await a.api.discard(id);
      expect(await a.api.rows()).toEqual([]);
    },
  );

  it('a row whose v is a whole number above the bundle’s is a newer format: left alone, shown unknown, not discarded (SPEC §17)', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const id = 'notes-0000000000000000000new03';
    const raw = await plant(a, id, { title: 'x' });
    await a.store.replace({
      owner: OWNER,
      expected: [{ id, row: raw }],
      put: [{ ...raw, v: 3 }],
      reason: 'test',
    });
    await a.api.flush({ force: true });
    expect(world.server.effects).toEqual([]);
    expect(await a.api.rows()).toMatchObject([{ id, status: 'unknown', row: { v: 3 } }]);
    await expect(a.api.discard(id)).rejects.toMatchObject({ code: 'not_blocked' });
    expect(await world.holders[0]!.store.get(id)).toEqual({ ...raw, v: 3 });
  });

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

  it('G4: a row whose stored value goes bad while on the wire holds its record until its lease ends; the edit after it goes then, after it', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const b = await world.holder('B');
    const first = await a.api.enqueue(updateNote(record.id, { title: 'first' }));
    const { done } = await world.holdInFlight(a, first.id);
    const second = await a.api.enqueue(updateNote(record.id, { title: 'second' }));
    expect(second.outcome).toBe('successor');
    // One field of the row on the wire goes bad; its state and claim still say it is sent.
    const { raw, bad } = await damage(a, first.id, (row) => ({
      ...row,
      evidence: { ...row.evidence, attemptCount: -1 },
    }));

    // Another holder's flush sends nothing of the record, leaves the value as it is, and
    // comes back when the lease ends.
    const report = await b.api.flush({ force: true });
    expect(world.log.filter((line) => line.startsWith('send:B:'))).toEqual([]);
    expect(await a.store.get(first.id)).toEqual(bad);
    expect(report.nextAttemptAt).toBe(raw.claim!.expiresAt);

    // The older request lands; its holder cannot settle the bad value and leaves it.
    a.transport.open();
    await done;
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'first' });

    // Past the lease the value is quarantined whole, and the next edit goes.
    world.clock.advance(LEASE + 1);
    await b.api.flush();
    expect(await a.store.get(first.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'row_corrupt',
      raw: bad,
    });
    expect(world.server.effects.map((effect) => effect.key)).toEqual([
      first.requestId,
      second.requestId,
    ]);
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'second' });
  });

  it('G4: a row on the wire whose record can no longer be read holds every record of its owner, wherever the scan finds it, until its lease ends', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const first = await a.api.enqueue(updateNote(record.id, { title: 'first' }));
    const { done } = await world.holdInFlight(a, first.id);
    // The value on the wire loses its record: `targetId` is no string now.
    const { bad } = await damage(a, first.id, (row) => ({ ...row, targetId: 42 }));

    // Another holder, its clock behind, edits the record: no successor (the record's rows no
    // longer include the bad value), and ahead of it in the queue, with more than a batch of
    // other rows between them.
    const behind = { now: () => world.clock.now() - 800 };
    const b = await world.holder('B', { clock: behind });
    const second = await b.api.enqueue(updateNote(record.id, { title: 'second' }));
    expect(second.outcome).toBe('queued');
    for (let i = 0; i < 60; i++) await b.api.enqueue(createNote({ title: `other ${i}` }));

    await b.api.flush({ force: true });
    expect(world.log.filter((line) => line.startsWith('send:B:'))).toEqual([]);
    a.transport.open();
    await done;

    world.clock.advance(LEASE + 1000);
    await b.api.flush();
    expect(await a.store.get(first.id)).toMatchObject({ blockedCode: 'row_corrupt', raw: bad });
    expect(
      world.server.effects.filter((effect) => effect.method === 'PATCH').map((e) => e.key),
    ).toEqual([first.requestId, second.requestId]);
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'second' });
  });

  it('G7: a quarantined value is left as it is by a later edit of its record', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const id = 'notes-0000000000000000000bad02';
    expect(
      await a.store.replace({
        owner: OWNER,
        expected: [{ id, row: null }],
        put: [
          {
            v: 1,
            id,
            owner: OWNER,
            collection: 'notes',
            kind: null,
            targetId: record.id,
            savedAt: world.clock.now(),
            state: 'queued',
          },
        ],
        reason: 'test',
      }),
    ).toBe('committed');
    a.transport.close();
    await a.api.flush();
    const quarantined = await a.store.get(id);
    expect(quarantined).toMatchObject({ state: 'blocked', blockedCode: 'row_corrupt' });

    await a.api.enqueue(updateNote(record.id, { title: 'b' }));
    expect(await a.store.get(id)).toEqual(quarantined);
  });
});
