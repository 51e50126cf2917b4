import { afterEach, describe, expect, it } from 'vitest';
import type { ConflictEvidence } from '../../shared/model/conflict-evidence.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import { decodeRow } from '../../shared/model/row.ts';
import { restoreRowId } from '../../shared/plan/restore.ts';
import { type Holder, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { updateNote } from '../support/intents.ts';

/**
 * SPEC §10.1 (seed 003 `historyRef`): what a conflict overwrote stays recoverable. The evidence
 * names the overwritten server version, the ledger keeps the reference after settlement, and
 * `restore` writes that version back as a new durable mutation through the outbox.
 */
describe.each(STORE_KINDS)('restoring what a conflict overwrote on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  /**
   * Another device moved the note to revision 2 (`body: theirs`); this device's edit of
   * revision 1 meets the conflict, is resent at revision 2 and settles as revision 3: last
   * writer wins, the other device's text is overwritten. Returns the ledger entry.
   */
  async function overwriteTheirs(a: Holder) {
    const record = world.server.seed(OWNER, { title: 'Trip', body: 'base' });
    world.server.editElsewhere(record.id, { body: 'theirs' });
    const u = await a.api.enqueue(updateNote(record.id, { body: 'mine' }, 1));
    const evidence: ConflictEvidence[] = [];
    a.transport.beforeSend = async (request) => {
      if (request.requestId === u.requestId) return;
      const decoded = decodeRow(await a.store.get(request.requestId));
      if (decoded.ok && decoded.row.conflict)
        evidence.push(decoded.row.conflict as ConflictEvidence);
    };
    await a.api.flush();
    a.transport.beforeSend = undefined;
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 3,
      data: { title: 'Trip', body: 'mine' },
    });
    const [entry] = await a.api.conflicts();
    return { record, entry: entry!, evidence, original: u };
  }

  it('conflict → evidence with historyRef → settled ledger keeps it → restore writes the overwritten version back at revision +1, once', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry, evidence, original } = await overwriteTheirs(a);
    const ref = {
      kind: 'record_history',
      collection: 'notes',
      recordId: record.id,
      supersededRevision: 2,
      access: 'server_lookup',
    };
    expect(evidence.map((e) => e.historyRef)).toEqual([ref]);
    expect(entry).toMatchObject({ kind: 'update', historyRef: ref, finalRevision: 3 });
    expect(entry).not.toHaveProperty('restoredBy');
    expect(world.server.effects).toHaveLength(1);

    const restored = await a.api.restore(entry.successorId);
    const id = restoreRowId(entry.successorId);
    expect(restored).toEqual({ id, requestId: id, targetId: record.id, outcome: 'queued' });
    // Durable before it is sent, and recorded on the ledger entry in the same transaction.
    expect(await world.row(id)).toMatchObject({
      state: 'queued',
      kind: 'update',
      baseRevision: 3,
      payload: { title: 'Trip', body: 'theirs' },
      request: { requestId: id, headers: { 'if-match': '"3"' } },
    });
    expect((await a.api.conflicts())[0]).toEqual({
      ...entry,
      restoredBy: { rowId: id, at: world.clock.now() },
    });
    expect(world.server.seen.map((s) => s.key)).not.toContain(id);

    await a.api.flush();
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 4,
      data: { title: 'Trip', body: 'theirs' },
    });
    expect(world.server.effects).toHaveLength(2);
    expect(world.server.effectsFor(id)).toBe(1);
    expect(await world.rows()).toEqual([]);
    // Nothing was deleted by it: the ledger entry, the receipts of the conflict and the restore.
    expect(await a.api.conflicts()).toHaveLength(1);
    expect(await a.api.receipt(entry.successorId)).toBeDefined();
    expect(await a.api.receipt(original.requestId!)).toBeUndefined();
    expect(await a.api.receipt(id)).toMatchObject({ revision: 4 });
    // The restore overwrote revision 3: that version (this device's edit) is kept in turn.
    expect(world.server.version(OWNER, record.id, 3)).toMatchObject({
      kind: 'found',
      version: { value: { body: 'mine' }, supersededBy: id },
    });

    // Asked again, it answers with the same row and neither asks the server nor sends again.
    const lookups = a.transport.historyLookups.length;
    expect(await a.api.restore(entry.successorId)).toMatchObject({ id, outcome: 'existing' });
    expect(a.transport.historyLookups).toHaveLength(lookups);
    await a.api.flush({ force: true });
    expect(world.server.effects).toHaveLength(2);
  });

  it('a server without history leaves historyRef null and nothing to restore; an unknown entry is not_found', async () => {
    world = await World.create(kind);
    world.server.keepsHistory = false;
    const a = await world.holder('A');
    const { entry, evidence } = await overwriteTheirs(a);
    expect(evidence.map((e) => e.historyRef)).toEqual([null]);
    expect(entry.historyRef).toBeNull();
    await expect(a.api.restore(entry.successorId)).rejects.toMatchObject({
      code: 'history_unavailable',
      details: { reason: 'no_history' },
    });
    await expect(a.api.restore('notes-000000000000000000000000')).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(a.transport.historyLookups).toEqual([]);
    expect(await world.rows()).toEqual([]);
  });

  it('an unreachable server is a retryable error that enqueues nothing; an expired version is history_unavailable', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry } = await overwriteTheirs(a);
    a.transport.historyFails = true;
    const offline = await a.api.restore(entry.successorId).catch((error: unknown) => error);
    expect(offline).toBeInstanceOf(OutboxError);
    expect(offline).toMatchObject({ code: 'network', details: { retryable: true } });
    expect(await world.rows()).toEqual([]);
    expect((await a.api.conflicts())[0]).not.toHaveProperty('restoredBy');
    a.transport.historyFails = false;
    expect(await a.api.restore(entry.successorId)).toMatchObject({ outcome: 'queued' });

    // The server's history of another conflict expired (the sweep): nothing to write back.
    world.server.history.clear();
    world.server.editElsewhere(record.id, { body: 'again' });
    await a.api.flush();
    const ledger = await a.api.conflicts();
    expect(ledger).toHaveLength(2);
    world.server.history.clear();
    await expect(a.api.restore(ledger[0]!.successorId)).rejects.toMatchObject({
      code: 'history_unavailable',
      details: { reason: 'expired' },
    });
  });

  it('a restore replayed after its answer was lost and the worker restarted sends the same key: one effect', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry } = await overwriteTheirs(a);
    const first = await a.api.restore(entry.successorId);
    world.server.inject('drop');
    const lost = await a.api.flush();
    expect(lost).toMatchObject({ transient: 1 });
    expect(world.server.effectsFor(first.id)).toBe(1);

    // A restarted worker: the app, unsure the first call landed, restores again.
    const b = await world.holder('B');
    const again = await b.api.restore(entry.successorId);
    expect(again).toMatchObject({ id: first.id, outcome: 'existing' });
    await b.api.flush({ force: true });
    expect(world.server.seen.filter((s) => s.key === first.id)).toHaveLength(2);
    expect(world.server.effectsFor(first.id)).toBe(1);
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 4,
      data: { body: 'theirs' },
    });
    expect(await world.rows()).toEqual([]);
  });

  it('two calls racing for one conflict (a retry after a dead port) enqueue one row', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const b = await world.holder('B');
    const { entry } = await overwriteTheirs(a);
    const [one, two] = await Promise.all([
      a.api.restore(entry.successorId),
      b.api.restore(entry.successorId),
    ]);
    expect(one.id).toBe(two.id);
    expect([one.outcome, two.outcome].sort()).toEqual(['existing', 'queued']);
    expect((await world.rows()).map((row) => row.id)).toEqual([one.id]);
    await a.api.flush();
    expect(world.server.effectsFor(one.id)).toBe(1);
  });

  it('a restore racing another device’s edit meets a conflict handled by the normal rules; nothing is lost', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry } = await overwriteTheirs(a);
    const restored = await a.api.restore(entry.successorId);
    // Before the restore goes out, the other device edits once more (revision 4).
    world.server.editElsewhere(record.id, { body: 'theirs, later' });
    await a.api.flush();
    // Rebased (last writer wins) and applied once, under the successor's key.
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 5,
      data: { body: 'theirs' },
    });
    expect(world.server.effects).toHaveLength(2);
    expect(world.server.effectsFor(restored.id)).toBe(0);
    const ledger = await a.api.conflicts();
    expect(ledger).toHaveLength(2);
    const [latest, first] = ledger;
    expect(first).toMatchObject({
      successorId: entry.successorId,
      restoredBy: { rowId: restored.id },
    });
    expect(latest).toMatchObject({
      originalId: restored.id,
      overwrittenRevision: 4,
      finalRevision: 5,
      historyRef: { recordId: record.id, supersededRevision: 4 },
    });
    // The later edit it overwrote is kept and can be restored in turn.
    const back = await a.api.restore(latest!.successorId);
    await a.api.flush();
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 6,
      data: { body: 'theirs, later' },
    });
    expect(world.server.effectsFor(back.id)).toBe(1);
    expect(await world.rows()).toEqual([]);
  });

  it('a restore made while an edit of the record is in flight waits as its successor and goes after it', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry } = await overwriteTheirs(a);
    await a.api.enqueue(updateNote(record.id, { title: 'Trip!' }, 3));
    const { done } = await world.holdInFlight(a, (await world.rows())[0]!.id);
    const restored = await a.api.restore(entry.successorId);
    expect(restored.outcome).toBe('successor');
    a.transport.open();
    await done;
    await a.api.flush();
    // The edit (revision 4) then the restore rebased on it (revision 5): no conflict, in order.
    expect(world.server.effects.map((e) => e.revision)).toEqual([3, 4, 5]);
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 5,
      data: { title: 'Trip', body: 'theirs' },
    });
    expect(await a.api.conflicts()).toHaveLength(1);
  });

  it('G5: a restore merged into a queued conflict successor carries its ledger entry on: the merged row has it, and its ACK settles it', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const { record, entry } = await overwriteTheirs(a);
    // Another conflict of the record: its successor is written, then answered 503 (nothing applied).
    world.server.editElsewhere(record.id, { title: 'Trip again' });
    const u = await a.api.enqueue(updateNote(record.id, { title: 'Trip, mine' }, 3));
    world.server.beforeApply = (request) => {
      if (request.requestId !== u.requestId) return;
      world.server.inject('fail503');
      world.server.beforeApply = undefined;
    };
    await a.api.flush();
    const [successor] = await world.rows();
    expect(successor).toMatchObject({ successorOf: u.id, state: 'queued', baseRevision: 4 });
    // The restore's update absorbs the successor, which was never applied.
    const restored = await a.api.restore(entry.successorId);
    expect(restored.outcome).toBe('coalesced');
    expect(await world.row(successor!.id)).toBeUndefined();
    const ledger = await a.api.conflicts();
    expect(ledger.map((e) => e.successorId).sort()).toEqual(
      [entry.successorId, restored.id].sort(),
    );
    expect(ledger.find((e) => e.successorId === restored.id)).toMatchObject({
      overwrittenRevision: 4,
      finalRevision: null,
      unsettled: true,
    });
    expect(ledger.find((e) => e.successorId === entry.successorId)).toMatchObject({
      restoredBy: { rowId: restored.id },
    });
    await a.api.flush({ force: true });
    expect(world.server.records.get(record.id)?.revision).toBe(5);
    expect((await a.api.conflicts()).find((e) => e.successorId === restored.id)).toMatchObject({
      overwrittenRevision: 4,
      finalRevision: 5,
    });
  });
});
