import { afterEach, describe, expect, it } from 'vitest';
import type { CollectionHandler, IntentInfo } from '../../shared/model/handler.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import { NAME_RETENTION_MS } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';
import { legacyRewrite } from '../support/legacy-tab.ts';

/**
 * One record, one name (SPEC §6.1): `pending:<C>` and the server id C's success named are one
 * record, and the mapping outlives C's receipt, which is pruned much sooner.
 */
describe.each(STORE_KINDS)('one record, one name on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  const pruneReceipts = (a: Awaited<ReturnType<World['holder']>>, namesOlderThan?: number) =>
    a.store.prune(OWNER, {
      maxReceipts: 0,
      olderThan: world.clock.now() + 1,
      maxLedger: 100,
      ...(namesOlderThan === undefined ? {} : { namesOlderThan }),
    });

  it('G4: an edit made through pending:<C> after C’s receipt was pruned goes to the server id’s record, never left an orphan intent', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const created = await a.api.enqueue(createNote({ title: 'new' }));
    expect((await a.api.flush()).succeeded).toBe(1);
    const [effect] = world.server.effects;
    const serverId = (await a.store.getName(OWNER, created.targetId))?.serverId;
    expect(serverId).toBeDefined();
    await pruneReceipts(a);
    expect(await a.store.getReceipt(created.requestId!)).toBeUndefined();

    const edit = await a.api.enqueue(updateNote(created.targetId, { title: 'renamed' }));
    expect(edit).toMatchObject({ outcome: 'queued', targetId: serverId });
    expect((await a.api.flush()).succeeded).toBe(1);
    expect(world.server.effects.map((e) => e.method)).toEqual([effect!.method, 'PATCH']);
    expect(await a.api.rows()).toEqual([]);
  });

  it('G4: an orphan intent converted at flush takes its place after the edits of the server id made before it, whatever its clock says', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const created = await a.api.enqueue(createNote({ title: 'new' }));
    await a.api.flush();
    const serverId = (await a.store.getName(OWNER, created.targetId))!.serverId;
    // C was settled where this holder cannot read it (a legacy tab; an entry pruned): nothing
    // local says what pending:<C> became.
    await pruneReceipts(a, world.clock.now() + 1);
    expect(await a.store.getName(OWNER, created.targetId)).toBeUndefined();
    a.transport.close();
    const earlier = await a.api.enqueue(updateNote(serverId, { title: 'earlier' }));
    const intent = await a.api.enqueue(updateNote(created.targetId, { title: 'later' }));
    expect(intent.outcome).toBe('intent');
    // The intent's tab had its clock behind.
    const raw = (await a.store.get(intent.id)) as OutboxRow;
    const behind = { ...raw, savedAt: raw.savedAt - 60_000 };
    await a.store.replace({
      owner: OWNER,
      expected: [{ id: intent.id, row: raw }],
      put: [behind],
      reason: 'legacy',
    });
    a.transport.open();
    for (let i = 0; i < 3 && (await a.api.rows()).length > 0; i++) await a.api.flush();
    expect(await a.api.rows()).toEqual([]);
    const patches = world.server.effects.filter((e) => e.method === 'PATCH');
    expect(patches.map((e) => e.key)).toEqual([earlier.requestId, expect.any(String)]);
    expect(world.server.records.get(serverId)?.data).toMatchObject({ title: 'later' });
  });

  it('keeps the name while its retention lasts, and drops it after once no row names it', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const created = await a.api.enqueue(createNote({ title: 'new' }));
    await a.api.flush();
    const now = world.clock.now();
    await pruneReceipts(a, now - NAME_RETENTION_MS);
    expect(await a.store.getName(OWNER, created.targetId)).toBeDefined();
    await pruneReceipts(a, now + 1);
    expect(await a.store.getName(OWNER, created.targetId)).toBeUndefined();
  });

  /** The notes handler with one more kind, `archive`, which no merge rule knows (§2, §6). */
  const archiving = (): Record<string, CollectionHandler> => {
    const notes = world.handlers().notes!;
    return {
      notes: {
        ...notes,
        kinds: ['create', 'update', 'delete', 'archive'],
        toRequest: (intent: IntentInfo) =>
          intent.kind === 'archive'
            ? {
                method: 'PATCH',
                url: `/api/notes/${encodeURIComponent(intent.targetId)}`,
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ archived: true }),
              }
            : notes.toRequest(intent),
      },
    };
  };

  it.each([
    { when: 'before C was sent', inFlight: false },
    { when: 'while C is on the wire', inFlight: true },
  ])(
    '§8: an edit of pending:<C> of a kind without merge rules made $when is an intent, sent to the server id C’s receipt names',
    async ({ inFlight }) => {
      world = await World.create(kind);
      const a = await world.holder('A', { handlers: archiving() });
      const created = await a.api.enqueue(createNote({ title: 'x' }));
      const held = inFlight ? await world.holdInFlight(a, created.id) : undefined;
      const edit = await a.api.enqueue({
        collection: 'notes',
        kind: 'archive',
        targetId: created.targetId,
      });
      expect(edit.outcome).toBe('intent');
      expect((await world.row(edit.id))?.request).toBeUndefined();
      if (held !== undefined) {
        a.transport.open();
        await held.done;
      }
      await a.api.flush();
      await a.api.flush();
      const serverId = (await a.store.getName(OWNER, created.targetId))!.serverId;
      expect(world.server.seen.map((request) => `${request.method} ${request.url}`)).toEqual([
        'POST /api/notes',
        `PATCH /api/notes/${serverId}`,
      ]);
      expect(world.server.records.get(serverId)?.data).toMatchObject({ archived: true });
      expect(await a.api.rows()).toEqual([]);
    },
  );

  it('G4: an intent whose create vanished holds the later edits of its collection wherever the scan finds them, until it is resolved (§6.1)', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const created = await a.api.enqueue(createNote({ title: 'draft' }));
    world.server.inject('drop');
    await a.api.flush();
    world.clock.advance(1);
    const intent = await a.api.enqueue(updateNote(created.targetId, { title: 'old' }));
    expect(intent.outcome).toBe('intent');
    // A legacy tab resends the create, reads its answer and removes the row: no name is kept.
    await legacyRewrite(a.store, await a.store.get(created.id));
    const [record] = [...world.server.records.values()];
    world.clock.advance(1);
    // Another holder, its clock behind, edits the record by its server id after the intent was
    // made — ahead of it in the queue, more than a scan batch of other rows between them.
    const b = await world.holder('B', { clock: { now: () => world.clock.now() - 800 } });
    const later = await b.api.enqueue(updateNote(record!.id, { title: 'new' }));
    expect(later.outcome).toBe('queued');
    for (let i = 0; i < 60; i++) await b.api.enqueue(createNote({ title: `other ${i}` }));

    // The server's receipt lookup fails: the intent stays unresolved, and the edit waits.
    b.transport.lookupFails = true;
    await b.api.flush({ force: true });
    expect(world.server.seen.some((request) => request.key === later.requestId)).toBe(false);

    b.transport.lookupFails = false;
    await b.api.flush({ force: true });
    await b.api.flush({ force: true });
    // The intent's edit, converted, lands first; the later edit last.
    const patches = world.server.effects.filter((e) => e.method === 'PATCH').map((e) => e.key);
    expect(patches).toHaveLength(2);
    expect(patches.at(-1)).toBe(later.requestId);
    expect(world.server.records.get(record!.id)?.data).toMatchObject({ title: 'new' });
  });
});
