import { afterEach, describe, expect, it } from 'vitest';
import { OutboxError } from '../../shared/model/errors.ts';
import type { Json } from '../../shared/model/json.ts';
import type { ConflictLedgerEntry, Receipt, RecordName } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';

/**
 * G7 for the engine's other stores: a receipt, a record name, a tombstone, a ledger entry or a
 * meta value damaged in place never stops the loop, never names a record and never resends a
 * key: a damaged entry reads as none, which the engine already handles (§2, §6.1, §8, §15).
 */
/**
 * A `superseded` tombstone (written when a conflict successor replaces its original, §10) whose
 * `into` was damaged to a value that is no key. Every flush, rows(), stats() and health's row read
 * walk the tombstone of a missing predecessor (predecessors.ts resolve()).
 */
describe.each(STORE_KINDS)('damaged superseded tombstone on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it('one damaged tombstone must not stop the whole owner queue nor the reads (G1, G7, §23)', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { id: noteId } = world.server.seed(OWNER, { title: 'zero' });
    // An unrelated record's create, and an update that waits on a conflict-replaced original.
    const other = await a.api.enqueue(createNote({ title: 'unrelated' }));
    const waiting = await a.api.enqueue(updateNote(noteId, { title: 'later' }));
    const gone = 'notes-00000000000000000000gone';
    const raw = (await a.store.get(waiting.id)) as Record<string, unknown>;
    expect(
      await a.store.replace({
        owner: OWNER,
        expected: [{ id: waiting.id, row: raw }],
        put: [{ ...raw, successorOf: gone }],
        // The original's tombstone, its `into` damaged in place.
        tombstones: [
          { id: gone, owner: OWNER, reason: 'superseded', into: null as unknown as string, at: 1 },
        ],
        reason: 'test',
      }),
    ).toBe('committed');

    // Reads answer (the row with a status), never a storage error.
    const rows = await a.api.rows().catch((e: unknown) => `${(e as { code?: string }).code}`);
    const stats = await a.api.stats().catch((e: unknown) => `${(e as { code?: string }).code}`);
    const report = await a.api.flush({ force: true });
    const again = await a.api.flush({ force: true });
    expect({
      rows: Array.isArray(rows) ? 'ok' : rows,
      stats: typeof stats === 'object' ? 'ok' : stats,
      stopped: [report.stopped, again.stopped],
      unrelatedSent: world.server.effects.some((e) => e.key === other.requestId),
    }).toEqual({ rows: 'ok', stats: 'ok', stopped: [undefined, undefined], unrelatedSent: true });
  });
});

const DAY = 24 * 60 * 60 * 1000;

/**
 * §15: a request that may have been applied is resent under its key only while its first attempt
 * is younger than the retention less a margin; past that the receipt lookup is asked first. The
 * retention a restarted worker knows comes from `meta` ("retention"), read by retention-book.ts
 * with only a `typeof value === 'number'` check.
 */
describe.each(STORE_KINDS)('damaged retention meta on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it.each([NaN, Infinity])(
    'a retention of %s in meta: an aged key is not resent, the lookup is asked (G2)',
    async (damaged) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const created = await a.api.enqueue(createNote({ title: 'once' }));
      world.server.inject('drop'); // applied, answer lost: outcome unknown
      await a.api.flush();
      expect(world.server.effects).toHaveLength(1);

      world.clock.advance(8 * DAY);
      // The server's ledger forgot the key (7-day retention).
      world.server.ledger.delete(`${OWNER}\u0000${created.requestId}`);
      // The meta value, damaged in place.
      await a.store.setMeta('retention', { '': damaged } as never);
      // A restarted worker: a new holder, learning retention from meta.
      const b = await world.holder('B');
      await b.api.flush({ force: true });

      // Expected: the lookup was asked (not found → blocked retention_exceeded), one effect.
      expect(world.server.effects.filter((e) => e.key === created.requestId)).toHaveLength(1);
      expect(await world.row(created.id)).toMatchObject({
        state: 'blocked',
        blockedCode: 'retention_exceeded',
      });
    },
  );

  it('control: with no retention in meta the same row is asked about, not resent', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const created = await a.api.enqueue(createNote({ title: 'once' }));
    world.server.inject('drop');
    await a.api.flush();
    world.clock.advance(8 * DAY);
    world.server.ledger.delete(`${OWNER}\u0000${created.requestId}`);
    const b = await world.holder('B');
    await b.api.flush({ force: true });
    expect(world.server.effects).toHaveLength(1);
    expect(await world.row(created.id)).toMatchObject({ blockedCode: 'retention_exceeded' });
  });
});

/**
 * §8 orphan intents: the create C vanished; its receipt is found in the local store and its
 * serverId is used as is (orphan-intents.ts). The receipt is damaged in place (serverId no string).
 */
describe.each(STORE_KINDS)('damaged receipt behind an orphan intent on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it.each([
    { damage: 'null', serverId: null },
    { damage: 'a number', serverId: 42 },
    // Written by a bundle that took whatever id `readReceipt` gave (§6.1: never a pending target).
    { damage: 'a pending target', serverId: 'pending:zz' },
  ])(
    'serverId $damage: the other rows still go, the intent is resolved through the server',
    async ({ serverId }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const c = await a.api.enqueue(createNote({ title: 'one' }));
      const { done } = await world.holdInFlight(a, c.id);
      const intent = await a.api.enqueue(updateNote(`pending:${c.id}`, { title: 'two' }));
      // C settled elsewhere (a legacy tab deleted it); its receipt is here, damaged in place.
      const raw = await a.store.get(c.id);
      const receipt = {
        requestId: c.requestId,
        owner: OWNER,
        rowId: c.id,
        collection: 'notes',
        kind: 'create',
        targetId: `pending:${c.id}`,
        status: 201,
        body: { id: 'n_9', revision: 1 },
        serverId,
        revision: 1,
        settledAt: world.clock.now(),
      } as unknown as Receipt;
      expect(
        await a.store.replace({
          owner: OWNER,
          expected: [{ id: c.id, row: raw }],
          delete: [c.id],
          receipts: [receipt],
          reason: 'test',
        }),
      ).toBe('committed');
      a.transport.open();
      await done;
      const unrelated = await a.api.enqueue(createNote({ title: 'unrelated' }));
      const r1 = await a.api.flush({ force: true });
      const r2 = await a.api.flush({ force: true });
      const rows = await world.rows().catch((e: unknown) => String(e));
      expect({
        stopped: [r1.stopped, r2.stopped],
        unrelatedSent: world.server.effects.some((e) => e.key === unrelated.requestId),
        intent: Array.isArray(rows)
          ? rows.map((r) => ({
              id: r.id === intent.id ? 'intent' : r.id,
              targetId: r.targetId,
              state: r.state,
              code: r.blockedCode,
            }))
          : rows,
      }).toEqual({
        stopped: [undefined, undefined],
        unrelatedSent: true,
        // Read as no receipt, the create's server id is asked of the server (§8): converted, sent.
        intent: [],
      });
    },
  );
});

/**
 * §6.1 one record one name: `pending:<C>` → server id, kept 30 days. A names entry damaged in
 * place (its serverId no string) while C's receipt is intact. An edit made through pending:<C>.
 */
describe.each(STORE_KINDS)('damaged names entry on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it.each([
    { damage: 'null', serverId: null },
    { damage: 'a number', serverId: 42 },
    { damage: 'an object', serverId: { id: 'x' } },
    { damage: 'a pending target', serverId: 'pending:zz' },
  ])(
    'serverId $damage: the edit goes to the server id the receipt names, or a typed error that says the mapping is damaged',
    async ({ serverId }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const c = await a.api.enqueue(createNote({ title: 'one' }));
      await a.api.flush();
      const receipt = await a.api.receipt(c.requestId!);
      expect(receipt?.serverId).toBeTypeOf('string');
      const name = (await a.store.getName(OWNER, `pending:${c.id}`)) as RecordName;
      expect(name.serverId).toBe(receipt!.serverId);
      await a.store.replace({
        owner: OWNER,
        expected: [],
        names: [{ ...name, serverId: serverId as unknown as string }],
        reason: 'test',
      });

      const result = await a.api
        .enqueue(updateNote(`pending:${c.id}`, { title: 'two' }))
        .catch((e: unknown) => ({
          code: (e as { code?: string }).code,
          message: (e as Error).message,
        }));
      expect(result).toMatchObject({ targetId: receipt!.serverId });
    },
  );
});

/** A conflict-ledger entry damaged in place, then `restore(conflictId)` and `conflicts()` (§10.1, G7). */
describe.each(STORE_KINDS)('damaged conflict-ledger entry on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  const entry = (record: string, extra: Record<string, unknown>) =>
    ({
      successorId: 'notes-0000000000000000000succ1',
      originalId: 'notes-0000000000000000000orig1',
      owner: OWNER,
      collection: 'notes',
      targetId: record,
      overwrittenRevision: 2,
      finalRevision: 3,
      lineageLength: 1,
      copy: { revisionOnly: 2 },
      recordedAt: 1,
      settledAt: 2,
      kind: 'update',
      historyRef: {
        kind: 'record_history',
        collection: 'notes',
        recordId: record,
        supersededRevision: 2,
        access: 'server_lookup',
      },
      ...extra,
    }) as unknown as ConflictLedgerEntry;

  it.each([
    { damage: 'restoredBy: null', extra: { restoredBy: null } },
    { damage: 'restoredBy: "x"', extra: { restoredBy: 'x' } },
  ])(
    'restore of an entry with $damage answers a typed error, nothing written',
    async ({ extra }) => {
      world = await World.create(kind);
      const a = await world.holder('A');
      const { id: record } = world.server.seed(OWNER, { title: 'zero' });
      await a.store.replace({
        owner: OWNER,
        expected: [],
        ledger: [entry(record, extra)],
        reason: 'test',
      });
      expect((await a.api.conflicts()).length).toBe(1);
      const error = await a.api.restore('notes-0000000000000000000succ1').catch((e: unknown) => e);
      expect({
        name: (error as Error)?.constructor?.name,
        code: (error as { code?: unknown })?.code,
        message: (error as Error)?.message,
      }).toMatchObject({ name: 'OutboxError' });
      expect(error).toBeInstanceOf(OutboxError);
    },
  );
});

/** Not damage: a hook that says "no revision" with `null`, as older builds stored it. */
describe.each(STORE_KINDS)(
  'a receipt and a name with no revision (null) on the %s store',
  (kind) => {
    let world: World;
    afterEach(() => world?.close());

    const nullRevision = () => {
      const notes = world.handlers().notes!;
      return {
        notes: {
          ...notes,
          readReceipt: (body: Json, status: number) => ({
            ...notes.readReceipt!(body, status),
            revision: null as unknown as number,
          }),
        },
      };
    };

    it('an edit through pending:<C> after C settled goes to the server id', async () => {
      world = await World.create(kind);
      const a = await world.holder('A', { handlers: nullRevision() });
      const created = await a.api.enqueue(createNote({ title: 'new' }));
      expect((await a.api.flush()).succeeded).toBe(1);
      const name = await a.store.getName(OWNER, created.targetId);
      expect(name?.serverId).toBeDefined();
      const edit = await a.api.enqueue(updateNote(created.targetId, { title: 'renamed' }));
      expect(edit).toMatchObject({ outcome: 'queued', targetId: name!.serverId });
    });

    it('G2: enqueue retried with the same id after it settled is `existing`, never sent again', async () => {
      world = await World.create(kind);
      const a = await world.holder('A', { handlers: nullRevision() });
      const input = { ...createNote({ title: 'once' }), id: 'note-00000001' };
      await a.api.enqueue(input);
      expect((await a.api.flush()).succeeded).toBe(1);
      const again = await a.api.enqueue(input);
      expect(again.outcome).toBe('existing');
      await a.api.flush();
      expect(world.server.seen.filter((r) => r.method === 'POST')).toHaveLength(1);
      expect(world.server.records.size).toBe(1);
    });
  },
);
