import { afterEach, describe, expect, it } from 'vitest';
import { LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';

/** Successor rows (SPEC §6) on top of a pending edit, and waking up for another holder's lease. */
describe.each(STORE_KINDS)('successors and leases on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it('an edit made on top of an in-flight edit of the same revision goes out on that edit’s revision, with no conflict', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'b' }, 1));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'c' }, 1));
    expect(u2.outcome).toBe('successor');
    a.transport.open();
    const report = await flush;
    expect(report).toMatchObject({ succeeded: 2, conflicts: 0 });
    expect(world.server.seen.map((s) => s.key)).toEqual([u1.requestId, u2.requestId]);
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 3,
      data: { title: 'b', body: 'c' },
    });
    expect(await a.api.conflicts()).toEqual([]);
  });

  it('an edit made from another revision than the in-flight one keeps its own and meets the conflict', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    world.server.editElsewhere(record.id);
    world.server.editElsewhere(record.id);
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'b' }, 3));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    await a.api.enqueue(updateNote(record.id, { body: 'old view' }, 1));
    a.transport.open();
    expect(await flush).toMatchObject({ conflicts: 1 });
    expect(await a.api.conflicts()).toHaveLength(1);
  });

  it('reports a row another holder is sending as waiting until that holder’s lease ends', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const b = await world.holder('B');
    await a.api.enqueue(createNote({ title: 'x' }));
    a.transport.close();
    void a.api.flush();
    await world.until(() => world.log.some((l) => l.startsWith('claim:A:')), 'A claimed');
    const report = await b.api.flush();
    expect(report).toMatchObject({
      claimed: 0,
      remaining: 1,
      nextAttemptAt: world.clock.now() + LEASE,
    });
  });
});
