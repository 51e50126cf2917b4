import { afterEach, describe, expect, it } from 'vitest';
import type { ConflictEvidence } from '../../shared/model/conflict-evidence.ts';
import type { OutboxStore, ReplacePlan } from '../../shared/model/store.ts';
import { type Holder, LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';
import { legacyRewrite } from '../support/legacy-tab.ts';

/** SPEC §18 rows C1–C7 (seed 003 §5): durable conflict successors, evidence and the ledger. */
describe.each(STORE_KINDS)('conflict scenarios on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  /** A record at revision 2 on the server while the app still edits revision 1. */
  async function staleEdit() {
    const record = world.server.seed(OWNER, { title: 'base' });
    world.server.editElsewhere(record.id, { title: 'theirs' });
    return record;
  }

  /** Holds every request but the original at the door until released. */
  function holdSuccessors(holder: Holder, originalKey: string) {
    let open = false;
    const waiting: (() => void)[] = [];
    holder.transport.beforeSend = (request) =>
      open || request.requestId === originalKey
        ? Promise.resolve()
        : new Promise<void>((go) => waiting.push(go));
    return {
      release() {
        open = true;
        for (const go of waiting.splice(0)) go();
      },
    };
  }

  /** Asserts that whenever a new request id leaves, its row is already durable (G5). */
  function requireDurableBeforeSend(store: OutboxStore, firstId: string, checked: string[] = []) {
    for (const holder of world.holders) {
      holder.transport.beforeSend = async (request) => {
        if (request.requestId === firstId) return;
        expect(await store.get(request.requestId)).toBeDefined();
        checked.push(request.requestId);
      };
    }
    return checked;
  }

  it('C1: the conflict successor is stored before it is sent; after a lost answer and a restart the same key is replayed', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const checked = requireDurableBeforeSend(a.store, u.requestId!);
    // The successor's answer is lost: the fault queued while the original is handled hits the next request.
    world.server.beforeApply = (request) => {
      if (request.requestId !== u.requestId) return;
      world.server.inject('drop');
      world.server.beforeApply = undefined;
    };
    const first = await a.api.flush();
    expect(first).toMatchObject({ conflicts: 1, transient: 1, stopped: 'offline' });
    const [successor] = await world.rows();
    expect(successor).toMatchObject({
      successorOf: u.id,
      baseRevision: 2,
      state: 'queued',
      evidence: { attemptCount: 2 },
    });
    expect(successor!.request!.requestId).not.toBe(u.requestId);
    expect(successor!.request!.fingerprint).not.toBe(
      (await a.api.receipt(u.requestId!))?.requestId,
    );
    // Restart: a new holder (a restarted worker) replays the stored successor.
    const b = await world.holder('B');
    requireDurableBeforeSend(b.store, u.requestId!, checked);
    await b.api.flush({ force: true });
    const keys = world.server.seen.map((s) => s.key);
    expect(new Set(keys)).toEqual(new Set([u.requestId, successor!.id]));
    expect(keys).toEqual([u.requestId, successor!.id, successor!.id]);
    expect(checked).toEqual([successor!.id, successor!.id]);
    expect(world.server.records.get(record.id)?.revision).toBe(3);
    expect(world.server.effects).toHaveLength(1);
    const ledger = await b.api.conflicts();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({
      successorId: successor!.id,
      originalId: u.requestId,
      overwrittenRevision: 2,
      finalRevision: 3,
      lineageLength: 0,
    });
    expect(await world.rows()).toEqual([]);
  });

  it('C2: when the successor cannot be stored the original stays queued, nothing new is sent, and the flush is not offline', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    let failConflictWrites = true;
    const a = await world.holder('A', {
      wrapStore: (store) =>
        new Proxy(store, {
          get(target, prop, receiver) {
            if (prop !== 'replace') return Reflect.get(target, prop, receiver).bind(target);
            return (plan: ReplacePlan) =>
              failConflictWrites && plan.reason === 'conflict'
                ? Promise.reject(new Error('disk full'))
                : target.replace(plan);
          },
        }),
    });
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const report = await a.api.flush();
    expect(report.stopped).toBe('successor_persist_failed');
    expect(await world.row(u.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'successor_persist_failed' },
    });
    expect(world.server.seen.map((s) => s.key)).toEqual([u.requestId]);
    failConflictWrites = false;
    await a.api.flush({ force: true });
    expect(world.server.effects).toHaveLength(1);
    expect(world.server.records.get(record.id)?.data.title).toBe('mine');
    expect(await a.api.conflicts()).toHaveLength(1);
  });

  it('C3: a conflicting delete is replayed after a restart and the ledger holds one entry', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const d = await a.api.enqueue(deleteNote(record.id, 1));
    world.server.beforeApply = (request) => {
      if (request.requestId !== d.requestId) return;
      world.server.inject('drop');
      world.server.beforeApply = undefined;
    };
    await a.api.flush();
    const b = await world.holder('B');
    await b.api.flush({ force: true });
    expect(world.server.records.get(record.id)?.deleted).toBe(true);
    expect(world.server.effects.map((e) => e.method)).toEqual(['DELETE']);
    expect(await b.api.conflicts()).toHaveLength(1);
    const c = await world.holder('C');
    await c.api.flush({ force: true });
    expect(await c.api.conflicts()).toHaveLength(1);
  });

  it("C4: a stale holder's late conflict writes and sends nothing; the holder with the claim writes the successor", async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const b = await world.holder('B');
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    a.transport.holdAnswers = true;
    const late = a.api.flush();
    await world.until(() => world.server.seen.length === 1, 'A reached the server');
    world.clock.advance(LEASE + 1);
    const takeover = (await world.holdInFlight(b, u.id, 2)).done;
    const before = await a.store.get(u.id);
    a.transport.release();
    await late;
    expect(world.log).toContain(`settle:A:${u.id}:conflict:stale`);
    expect(await a.store.get(u.id)).toEqual(before);
    expect(world.log.filter((l) => l.startsWith('conflict:A'))).toEqual([]);
    b.transport.open();
    await takeover;
    const successors = world.log.filter((l) => l.startsWith('conflict:'));
    expect(successors).toHaveLength(1);
    expect(successors[0]).toMatch(/^conflict:B:/);
    expect(world.server.seen.filter((s) => s.key !== u.requestId)).toHaveLength(1);
    expect(world.server.effects).toHaveLength(1);
    expect(await b.api.conflicts()).toHaveLength(1);
  });

  it('C5: a late success of the original neither resurrects it nor changes the successor; other owners are untouched', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const b = await world.holder('B');
    const other = await world.holder('O', { owner: 'user-2' });
    const theirs = await other.api.enqueue(createNote({ title: 'theirs' }));
    const theirsBefore = await a.store.get(theirs.id);
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const late = (await world.holdInFlight(a, u.id)).done;
    world.clock.advance(LEASE + 1);
    const successorSent = holdSuccessors(b, u.requestId!);
    const takeover = b.api.flush();
    await world.until(
      () => world.log.some((l) => l.startsWith(`conflict:B:${u.id}->`)),
      'B wrote the successor',
    );
    const successorId = world.log
      .find((l) => l.startsWith(`conflict:B:${u.id}->`))!
      .split('->')[1]!;
    // B goes on to claim the successor and holds its request at the door.
    await world.until(
      () => world.log.includes(`claim:B:${successorId}:1`),
      'B claimed the successor',
    );
    const successorBefore = await a.store.get(successorId);
    a.transport.answerWith = {
      kind: 'response',
      status: 200,
      headers: {},
      body: JSON.stringify({ id: record.id, revision: 9 }),
    };
    a.transport.open();
    await late;
    expect(world.log).toContain(`settle:A:${u.id}:success:stale`);
    expect(await a.store.get(u.id)).toBeUndefined();
    expect(await a.store.get(successorId)).toEqual(successorBefore);
    expect(await a.store.get(theirs.id)).toEqual(theirsBefore);
    successorSent.release();
    await takeover;
    expect(await world.rows()).toEqual([]);
    expect(await a.store.get(theirs.id)).toEqual(theirsBefore);
  });

  it('C6: a conflict storm stops after three successors and the next flush finishes with one effect', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    let edits = 4;
    world.server.beforeApply = () => {
      if (edits-- > 0) world.server.editElsewhere(record.id, { title: `theirs ${edits}` });
    };
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const first = await a.api.flush();
    expect(first.stopped).toBe('conflict_storm');
    expect(world.log.filter((l) => l.startsWith('conflict:A'))).toHaveLength(3);
    expect(world.log.filter((l) => l.startsWith('storm:A'))).toHaveLength(1);
    const [third] = await world.rows();
    expect(third).toMatchObject({ state: 'queued', evidence: { lastErrorCode: 'conflict_storm' } });
    expect((third!.conflict as ConflictEvidence).lineage).toHaveLength(2);
    expect(world.server.effects).toEqual([]);
    // The requeued third successor still carries revision 5 while the server is at 6: the next
    // flush rebases it once more, then succeeds.
    const second = await a.api.flush({ force: true });
    expect(second.stopped).toBeUndefined();
    expect(world.server.effects).toHaveLength(1);
    expect(world.server.records.get(record.id)?.data.title).toBe('mine');
    const ledger = await a.api.conflicts();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject({
      originalId: u.requestId,
      lineageLength: 3,
      finalRevision: 7,
    });
    expect(new Set(world.server.seen.map((s) => s.key)).size).toBe(5);
  });

  it.each([
    { sendsCopy: true, basis: 'server_detail' },
    { sendsCopy: false, basis: 'current_revision_only' },
  ])(
    'C7: the evidence says whether the server sent its copy ($basis); original bytes are kept and nothing is merged',
    async ({ sendsCopy, basis }) => {
      world = await World.create(kind);
      const record = await staleEdit();
      world.server.sendCurrentOnConflict = sendsCopy;
      const a = await world.holder('A');
      const u = await a.api.enqueue(updateNote(record.id, { body: 'mine' }, 1));
      const original = (await world.row(u.id))!.request;
      const successorSent = holdSuccessors(a, u.requestId!);
      const flush = a.api.flush();
      await world.until(
        async () => (await world.rows()).some((r) => r.successorOf === u.id),
        'successor written',
      );
      const successor = (await world.rows()).find((r) => r.successorOf === u.id)!;
      const evidence = successor.conflict as ConflictEvidence;
      expect(evidence.basis).toBe(basis);
      expect(evidence.predecessor.request).toEqual(original);
      expect(evidence.copy.remote).toEqual(
        sendsCopy ? { snapshot: 2, value: { title: 'theirs' } } : { revisionOnly: 2 },
      );
      expect(evidence.copy.base).toEqual({ absent: 'no_copy_in_row' });
      expect(successor.payload).toEqual({ body: 'mine' });
      successorSent.release();
      await flush;
      expect(world.server.records.get(record.id)?.data).toEqual({ title: 'theirs', body: 'mine' });
      expect((await a.api.conflicts())[0]?.copy).toMatchObject({
        remote: sendsCopy ? 'snapshot' : 'revision_only',
      });
    },
  );

  it('under the block policy a conflict is quarantined with its evidence; retry requeues it and discard removes it', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A', { handlers: world.handlers({ conflict: 'block' }) });
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    await a.api.flush();
    const blocked = await world.row(u.id);
    expect(blocked).toMatchObject({ state: 'blocked', blockedCode: 'revision_conflict' });
    expect((blocked!.conflict as ConflictEvidence).failure).toEqual({
      kind: 'revision_mismatch',
      currentRevision: 2,
      status: 412,
    });
    expect((await a.api.row(u.id))?.status).toBe('blocked');
    await a.api.retry(u.id);
    expect((await world.row(u.id))?.state).toBe('queued');
    await a.api.flush();
    expect((await world.row(u.id))?.state).toBe('blocked');
    await a.api.discard(u.id);
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects).toEqual([]);
    await expect(
      a.api.enqueue({
        id: u.id,
        collection: 'notes',
        kind: 'update',
        targetId: record.id,
        payload: {},
      }),
    ).resolves.toMatchObject({ outcome: 'existing' });
  });

  /** The ledger entry written with the successor, before it is sent: no final revision yet. */
  const unsettledEntry = (successorId: string, originalId: string) => ({
    successorId,
    originalId,
    overwrittenRevision: 2,
    finalRevision: null,
    lineageLength: 0,
    unsettled: true,
  });

  it('G5: a conflict successor the server applied, blocked handler_failed when its answer could not be read, then discarded, keeps its ledger entry', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A', {
      handlers: world.handlers({
        readReceipt: () => {
          throw new Error('receipt parser broke');
        },
      }),
    });
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    await a.api.flush();
    const [successor] = await world.rows();
    expect(successor).toMatchObject({ state: 'blocked', blockedCode: 'handler_failed' });
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 3,
      data: { title: 'mine' },
    });
    await a.api.discard(successor!.id);
    expect(await world.rows()).toEqual([]);
    // Discarding takes back nothing the server did: the overwrite of revision 2 stays recorded.
    const ledger = await a.api.conflicts();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject(unsettledEntry(successor!.id, u.requestId!));
    await expect(a.api.restore(successor!.id)).rejects.toMatchObject({
      code: 'history_unavailable',
      details: { reason: 'final_revision_unknown' },
    });
  });

  it('G5: a conflict successor sent and removed by a legacy v0 tab, which writes no ledger, still has its ledger entry', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    // The successor is written, and the network goes before it is sent.
    world.server.beforeApply = () => {
      world.server.inject('network');
      world.server.beforeApply = undefined;
    };
    await a.api.flush();
    const [successor] = await world.rows();
    expect(successor).toMatchObject({ successorOf: u.id, state: 'queued' });
    expect(await a.api.conflicts()).toEqual([
      expect.objectContaining(unsettledEntry(successor!.id, u.requestId!)),
    ]);
    // A tab of the old bundle marks it sending, sends it, and removes it on the 2xx (§17).
    const raw = (await a.store.get(successor!.id)) as Record<string, unknown>;
    const sending = { ...raw, state: 'sending', sentAt: world.clock.now() };
    expect(await legacyRewrite(a.store, raw, sending)).toBe('committed');
    const answer = world.server.handle(successor!.request!, OWNER);
    expect(answer).toMatchObject({ kind: 'response', status: 200 });
    expect(await legacyRewrite(a.store, sending)).toBe('committed');
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 3,
      data: { title: 'mine' },
    });
    await a.api.flush({ force: true });
    expect(world.server.effects).toHaveLength(1);
    const ledger = await a.api.conflicts();
    expect(ledger).toHaveLength(1);
    expect(ledger[0]).toMatchObject(unsettledEntry(successor!.id, u.requestId!));
  });

  it('G5: an entry whose successor is known never to have been applied goes — rebased again, merged into a later edit, or rejected and discarded — and one overwrite has one entry', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A');
    const u = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    // The first successor meets yet another edit: its 412 says it applied nothing. The second
    // is answered 503 (nothing applied).
    world.server.beforeApply = (request) => {
      if (request.requestId === u.requestId) return;
      world.server.editElsewhere(record.id, { title: 'again' });
      world.server.inject('fail503');
      world.server.beforeApply = undefined;
    };
    await a.api.flush();
    const [second] = await world.rows();
    expect((second!.conflict as ConflictEvidence).lineage).toHaveLength(1);
    expect((await a.api.conflicts()).map((e) => e.successorId)).toEqual([second!.id]);
    // A later edit merges it (it was never sent): the merged row carries the entry on.
    const merged = await a.api.enqueue(updateNote(record.id, { body: 'more' }, 1));
    expect(merged.outcome).toBe('coalesced');
    expect(await a.api.conflicts()).toEqual([
      expect.objectContaining({ successorId: merged.id, overwrittenRevision: 3, unsettled: true }),
    ]);
    // The server rejects it for good (422): it applied nothing, and its discard takes the entry.
    world.server.inject('reject');
    await a.api.flush({ force: true });
    expect(await world.row(merged.id)).toMatchObject({ state: 'blocked' });
    await a.api.discard(merged.id);
    expect(await a.api.conflicts()).toEqual([]);
    expect(world.server.effects).toEqual([]);
  });

  it('a custom conflict policy sends the payload it returns at the current revision', async () => {
    world = await World.create(kind);
    const record = await staleEdit();
    const a = await world.holder('A', {
      handlers: world.handlers({
        conflict: ({ conflict }) => ({ title: `merged with r${conflict.currentRevision}` }),
      }),
    });
    await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    await a.api.flush();
    expect(world.server.records.get(record.id)?.data.title).toBe('merged with r2');
  });
});
