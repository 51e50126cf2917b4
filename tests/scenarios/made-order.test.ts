import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { updateNote } from '../support/intents.ts';

/** SPEC §6.1: which edit came first is the store's commit order (`seq`), never a clock. */
describe.each(STORE_KINDS)('order from the store on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it('stores every edit with a seq that grows in the order the edits were made', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const b = await world.holder('B');
    const made = [];
    for (const [holder, title] of [
      [a, 'one'],
      [b, 'two'],
      [a, 'three'],
    ] as const) {
      made.push(await holder.api.enqueue({ ...updateNote(record.id, { title }), kind: 'archive' }));
    }
    const seqs = await Promise.all(
      made.map(async ({ id }) => ((await a.store.get(id)) as OutboxRow).seq),
    );
    expect(seqs).toEqual([...seqs].sort((x, y) => x! - y!));
    expect(new Set(seqs).size).toBe(3);
  });

  it("G4: rows of one record go in the order they were made, whatever their writers' clocks said", async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue({ ...updateNote(record.id, { title: 'one' }), kind: 'archive' });
    const u2 = await a.api.enqueue({ ...updateNote(record.id, { title: 'two' }), kind: 'archive' });
    // u2's writer had a clock 5 s behind, and linked it to nothing: by `savedAt` it sorts first.
    const { successorOf: _link, ...raw } = (await a.store.get(u2.id)) as OutboxRow;
    expect(
      await a.store.replace({
        owner: OWNER,
        expected: [{ id: u2.id, row: await a.store.get(u2.id) }],
        put: [{ ...raw, savedAt: raw.savedAt - 5_000 }],
        reason: 'test',
      }),
    ).toBe('committed');
    await a.api.flush();
    expect(world.server.seen.map((s) => s.key)).toEqual([u1.requestId, u2.requestId]);
  });

  it('G4: a new edit follows the edit made last, never the one a clock says was sent last', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'b' }, 1));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'c' }, 1));
    expect(u2.outcome).toBe('successor');
    // A legacy tab whose clock is behind sends u2 while u1 is still on the wire.
    const raw = (await a.store.get(u2.id)) as OutboxRow;
    const sending = { ...raw, state: 'sending', sentAt: world.clock.now() - 5_000 };
    expect(
      await a.store.replace({
        owner: OWNER,
        expected: [{ id: u2.id, row: raw }],
        put: [sending],
        reason: 'legacy',
      }),
    ).toBe('committed');
    const u3 = await a.api.enqueue(updateNote(record.id, { title: 'd' }, 1));
    expect(u3.outcome).toBe('successor');
    expect(await a.store.get(u3.id)).toMatchObject({ successorOf: u2.id });
    a.transport.open();
    await flush;
  });

  it("G4, G5: a retry after an edit applied with no overtaken mark (a legacy tab's) meets it through the server's revision check, with the evidence the server gave", async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'b' }, 1));
    const raw = (await a.store.get(u1.id)) as OutboxRow;
    const refused = { ...raw, state: 'blocked', blockedCode: 'http_422', blockedAt: 1 };
    await a.store.replace({
      owner: OWNER,
      expected: [{ id: u1.id, row: raw }],
      put: [refused],
      reason: 'test',
    });
    // A legacy tab's edit lands and its tab deletes its row: no ACK of this bundle marks u1.
    world.server.editElsewhere(record.id, { title: 'legacy' });
    expect((await a.store.get(u1.id)) as OutboxRow).not.toHaveProperty('overtakenBy');
    // The app retries u1: made now, after the legacy edit, it goes through the server's check.
    await a.api.retry(u1.id);
    await a.api.flush();
    await a.api.flush();
    expect(await world.rows()).toEqual([]);
    expect(world.server.records.get(record.id)?.data.title).toBe('b');
    const [entry] = await a.store.listConflicts(OWNER, 10);
    expect(entry).toMatchObject({ originalId: u1.id, overwrittenRevision: 2 });
  });

  it('G4: a success marks as overtaken only the blocked rows of edits made before it, by seq', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'b' }, 1));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'c' }, 1));
    // u2, made after u1, is blocked while u1 is on the wire (as a legacy tab's rewrite may).
    const raw = (await a.store.get(u2.id)) as OutboxRow;
    const blocked = { ...raw, state: 'blocked', blockedCode: 'http_422', blockedAt: 1 };
    expect(
      await a.store.replace({
        owner: OWNER,
        expected: [{ id: u2.id, row: raw }],
        put: [blocked],
        reason: 'legacy',
      }),
    ).toBe('committed');
    a.transport.open();
    expect((await flush).succeeded).toBe(1);
    // u1 landing went past nothing u2 carries: u2 is newer, and its retry resends it as it is.
    expect((await a.store.get(u2.id)) as OutboxRow).not.toHaveProperty('overtakenBy');
  });
});
