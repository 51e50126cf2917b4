import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildRowRequest } from '../../shared/plan/identity.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { type Holder, LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';
import { legacyRewrite } from '../support/legacy-tab.ts';

/** SPEC §18 rows 1–7 and 9–11 (seed 000 §6): two holders on one store, a fixed clock. */
describe.each(STORE_KINDS)('seed scenarios on the %s store', (kind) => {
  let world: World;
  beforeEach(async () => {
    world = await World.create(kind);
  });
  afterEach(() => world?.close());

  const note = (title: string) => ({ title });

  /** A holder whose `readReceipt` throws while `broken.on`: it cannot read the server's answers. */
  async function holderUnableToRead() {
    const rest = restHandler({ baseUrl: '/api/notes' });
    const broken = { on: true };
    const a = await world.holder('A', {
      handlers: world.handlers({
        readReceipt(body, status) {
          if (broken.on) throw new Error('cannot read this receipt');
          return rest.readReceipt!(body, status);
        },
      }),
    });
    return { a, broken };
  }

  /**
   * A create C1 applied whose answer was lost, an edit of it made meanwhile (an intent U1), and
   * C1 then settled by another writer (a legacy tab) that deleted it without a local receipt.
   */
  async function orphanIntent(a: Holder) {
    const c1 = await a.api.enqueue(createNote(note('x')));
    world.server.inject('drop');
    await a.api.flush();
    const u1 = await a.api.enqueue(updateNote(c1.targetId, note('y')));
    expect(u1.outcome).toBe('intent');
    await legacyRewrite(a.store, await a.store.get(c1.id));
    return { c1, u1 };
  }

  it('1: an update made while another is in flight waits as its successor and goes after it', async () => {
    const record = world.server.seed(OWNER, note('a'));
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, note('b')));
    const first = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, note('c')));
    expect(u2.outcome).toBe('successor');
    expect((await world.row(u2.id))?.successorOf).toBe(u1.id);
    const u2Before = await a.store.get(u2.id);
    world.server.inject('fail503');
    a.transport.open();
    const report = await first;
    expect(report.transient).toBe(1);
    expect(report.claimed).toBe(1);
    const u1After = await world.row(u1.id);
    expect(u1After?.state).toBe('queued');
    expect(u1After?.sentAt).toBeUndefined();
    expect(u1After?.claim?.fence).toBe(1);
    expect(await a.store.get(u2.id)).toEqual(u2Before);
    world.clock.advance(LEASE);
    await a.api.flush();
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2.requestId]);
    expect(world.log.filter((l) => l.startsWith('settle:A:'))).toEqual([
      `settle:A:${u1.id}:transient`,
      `settle:A:${u1.id}:success`,
      `settle:A:${u2.id}:success`,
    ]);
    expect(await world.rows()).toEqual([]);
  });

  it('2: when two holders flush one queued create at once, one claims with fence 1 and the other skips', async () => {
    const a = await world.holder('A');
    const b = await world.holder('B');
    const c1 = await a.api.enqueue(createNote(note('x')));
    const [ra, rb] = await Promise.all([a.api.flush(), b.api.flush()]);
    const claims = world.log.filter((l) => l.startsWith('claim:'));
    expect(claims).toHaveLength(1);
    expect(claims[0]).toMatch(new RegExp(`^claim:[AB]:${c1.id}:1$`));
    expect(ra.claimed + rb.claimed).toBe(1);
    expect(world.server.effectsFor(c1.requestId!)).toBe(1);
    expect(world.server.seen).toHaveLength(1);
    expect(await world.rows()).toEqual([]);
  });

  it('3: after the lease another holder takes over with fence 2; a late failure changes nothing', async () => {
    const a = await world.holder('A');
    const b = await world.holder('B');
    const c1 = await a.api.enqueue(createNote(note('x')));
    const late = (await world.holdInFlight(a, c1.id)).done;
    world.clock.advance(LEASE + 1);
    const takeover = (await world.holdInFlight(b, c1.id, 2)).done;
    const claimedByB = await a.store.get(c1.id);
    world.server.inject('fail503');
    a.transport.open();
    await late;
    expect(world.log).toContain(`settle:A:${c1.id}:transient:stale`);
    expect(await a.store.get(c1.id)).toEqual(claimedByB);
    b.transport.open();
    await takeover;
    expect(world.server.effectsFor(c1.requestId!)).toBe(1);
    expect(await world.rows()).toEqual([]);
  });

  it('3: a late success of the stale holder keeps the row for the new holder, which replays the key', async () => {
    const a = await world.holder('A');
    const b = await world.holder('B');
    const c1 = await a.api.enqueue(createNote(note('x')));
    a.transport.holdAnswers = true;
    const late = a.api.flush();
    await world.until(() => world.server.seen.length === 1, 'A reached the server');
    world.clock.advance(LEASE + 1);
    const takeover = (await world.holdInFlight(b, c1.id, 2)).done;
    a.transport.release();
    await late;
    expect(world.log).toContain(`settle:A:${c1.id}:success:stale`);
    expect((await world.row(c1.id))?.claim).toMatchObject({ holderId: 'B', fence: 2 });
    b.transport.open();
    await takeover;
    expect(world.server.seen.map((s) => s.key)).toEqual([c1.requestId, c1.requestId]);
    expect(world.server.effectsFor(c1.requestId!)).toBe(1);
    expect(await world.rows()).toEqual([]);
    expect((await b.api.receipt(c1.requestId!))?.serverId).toBe(world.server.effects[0]!.id);
  });

  it('4: an edit of a create in flight becomes an intent, converted to a real update on the receipt', async () => {
    const a = await world.holder('A');
    const c1 = await a.api.enqueue(createNote(note('x')));
    const flush = (await world.holdInFlight(a, c1.id)).done;
    const u1 = await a.api.enqueue(updateNote(c1.targetId, note('y')));
    expect(u1.outcome).toBe('intent');
    expect(u1.requestId).toBeUndefined();
    expect(await world.row(u1.id)).toMatchObject({
      targetId: `pending:${c1.id}`,
      successorOf: c1.id,
    });
    expect((await world.row(u1.id))?.request).toBeUndefined();
    a.transport.open();
    await flush;
    const convert = world.log.find((l) => l.startsWith(`convert:${u1.id}->`));
    expect(convert).toBeDefined();
    const serverId = world.server.effects[0]!.id;
    expect(world.server.effects.map((e) => [e.method, e.id])).toEqual([
      ['POST', serverId],
      ['PATCH', serverId],
    ]);
    expect(world.server.records.get(serverId)?.data).toMatchObject({ title: 'y' });
    expect(world.server.effects[1]!.key).not.toBe(u1.id);
    expect(await world.rows()).toEqual([]);
  });

  it('5: a delete of a deferred create is an intent; the resend replays the key and the delete follows', async () => {
    const a = await world.holder('A');
    const c1 = await a.api.enqueue(createNote(note('x')));
    world.server.inject('drop');
    const first = await a.api.flush();
    expect(first.transient).toBe(1);
    expect((await world.row(c1.id))?.deferredAt).toBeDefined();
    const d1 = await a.api.enqueue(deleteNote(c1.targetId));
    expect(d1.outcome).toBe('intent');
    await a.api.flush({ force: true });
    const serverId = world.server.effects[0]!.id;
    expect(world.server.seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /api/notes',
      'POST /api/notes',
      `DELETE /api/notes/${serverId}`,
    ]);
    expect(world.server.seen[0]!.key).toBe(world.server.seen[1]!.key);
    expect(world.server.effects.map((e) => e.method)).toEqual(['POST', 'DELETE']);
    expect(world.server.records.get(serverId)?.deleted).toBe(true);
    expect(await world.rows()).toEqual([]);
  });

  it("6: a flush never claims or deletes another owner's rows", async () => {
    const a = await world.holder('A');
    const other = await world.holder('B', { owner: 'user-2' });
    const theirs = await other.api.enqueue(createNote(note('theirs')));
    const mine = await a.api.enqueue(createNote(note('mine')));
    const before = await a.store.get(theirs.id);
    const report = await a.api.flush({ force: true });
    expect(report.claimed).toBe(1);
    expect(await a.store.get(theirs.id)).toEqual(before);
    expect(world.server.seen.map((s) => s.key)).toEqual([mine.requestId]);
    expect(world.log.some((l) => l.includes(theirs.id))).toBe(false);
    await expect(a.api.retry(theirs.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('7: a delete made while an update is in flight becomes its successor', async () => {
    const record = world.server.seed(OWNER, note('a'));
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, note('b')));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const del = await a.api.enqueue(deleteNote(record.id));
    expect(del.outcome).toBe('successor');
    expect(await world.row(del.id)).toMatchObject({ successorOf: u1.id, kind: 'delete' });
    expect((await world.row(u1.id))?.kind).toBe('update');
    a.transport.open();
    await flush;
    expect(world.server.effects.map((e) => e.method)).toEqual(['PATCH', 'DELETE']);
    await expect(a.api.enqueue(updateNote(record.id, note('c')))).resolves.toMatchObject({
      outcome: 'queued',
    });
  });

  it("9: a legacy tab's fresh sending row counts as in flight; after the lease it is resent with the same key", async () => {
    const record = world.server.seed(OWNER, note('a'));
    const a = await world.holder('A');
    const now = world.clock.now();
    const handler = restHandler({ baseUrl: '/api/notes' });
    const request = buildRowRequest(
      handler.toRequest({
        collection: 'notes',
        kind: 'update',
        targetId: record.id,
        payload: note('legacy'),
        baseRevision: null,
      }),
      'legacy-0000000000000001',
      null,
    );
    const legacy = {
      id: 'legacy-0000000000000001',
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      targetId: record.id,
      savedAt: now - 5,
      state: 'sending',
      sentAt: now,
      payload: note('legacy'),
      request,
      legacyTag: { keep: 'me' },
    };
    await a.store.replace({
      owner: OWNER,
      expected: [{ id: legacy.id, row: null }],
      put: [legacy],
      reason: 'legacy',
    });
    const idle = await a.api.flush();
    expect(idle.claimed).toBe(0);
    const edit = await a.api.enqueue(updateNote(record.id, note('new')));
    expect(edit.outcome).toBe('successor');
    expect(await a.store.get(legacy.id)).toEqual(legacy);
    world.clock.advance(LEASE);
    const flush = (await world.holdInFlight(a, legacy.id)).done;
    expect(await world.row(legacy.id)).toMatchObject({
      legacyTag: { keep: 'me' },
      state: 'sending',
      claim: { fence: 1 },
    });
    a.transport.open();
    await flush;
    expect(world.server.seen.map((s) => s.key)).toEqual([legacy.id, edit.requestId]);
    expect(world.server.records.get(record.id)?.data.title).toBe('new');
  });

  it('10: an intent whose create vanished is converted from the exact receipt the server holds', async () => {
    const a = await world.holder('A');
    await orphanIntent(a);
    await a.api.flush();
    const serverId = world.server.effects[0]!.id;
    expect(world.server.effects.map((e) => [e.method, e.id])).toEqual([
      ['POST', serverId],
      ['PATCH', serverId],
    ]);
    expect(await world.rows()).toEqual([]);
  });

  it('10: an intent whose create is unknown to the server is kept and marked, and a failed lookup leaves it untouched', async () => {
    const a = await world.holder('A');
    const c1 = await a.api.enqueue(createNote(note('x')));
    world.server.inject('network');
    await a.api.flush();
    const u1 = await a.api.enqueue(updateNote(c1.targetId, note('y')));
    await legacyRewrite(a.store, await a.store.get(c1.id));
    a.transport.lookupFails = true;
    const intentBefore = await a.store.get(u1.id);
    await a.api.flush();
    expect(await a.store.get(u1.id)).toEqual(intentBefore);
    a.transport.lookupFails = false;
    await a.api.flush();
    expect(await world.row(u1.id)).toMatchObject({
      evidence: { lastErrorCode: 'predecessor_receipt_unknown' },
      kind: 'update',
    });
    expect(world.server.effects).toEqual([]);
    expect((await a.api.row(u1.id))?.status).toBe('intent');
  });

  it('10: an orphan intent holds the later edits of its collection, and ends blocked when the server still knows no create (§6.1, G1, G4)', async () => {
    const a = await world.holder('A');
    const other = world.server.seed(OWNER, note('o'));
    const c1 = await a.api.enqueue(createNote(note('x')));
    world.server.inject('network');
    await a.api.flush();
    const u1 = await a.api.enqueue(updateNote(c1.targetId, note('y')));
    await legacyRewrite(a.store, await a.store.get(c1.id));
    // Made after the intent: its record could be the intent's, which nobody knows yet.
    const later = await a.api.enqueue(updateNote(other.id, note('p')));
    await a.api.flush();
    expect(await world.row(u1.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'predecessor_receipt_unknown' },
    });
    expect(world.server.seen.map((s) => s.key)).not.toContain(later.requestId);
    // Still unknown at the next flush: the intent ends blocked, its edit kept, and the rest go.
    await a.api.flush();
    expect(await world.row(u1.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'predecessor_receipt_unknown',
      payload: note('y'),
    });
    expect((await a.api.row(u1.id))?.status).toBe('blocked');
    expect(world.server.effectsFor(later.requestId!)).toBe(1);
  });

  it('10: an orphan intent whose create’s answer the app cannot read is blocked handler_failed, the flush goes on, and a retry once fixed converts it (G7, §6.1)', async () => {
    const rest = restHandler({ baseUrl: '/api/notes' });
    const broken = { on: true };
    const a = await world.holder('A', {
      handlers: world.handlers({
        readReceipt(body, status) {
          const facts = rest.readReceipt!(body, status);
          // A server id in the namespace of pending targets: refused, as a throw would be.
          const create = (body as { title?: unknown } | null)?.title === 'x';
          return broken.on && create ? { ...facts, serverId: 'pending:x' } : facts;
        },
      }),
    });
    const other = world.server.seed(OWNER, note('o'));
    const { u1 } = await orphanIntent(a);
    const later = await a.api.enqueue(updateNote(other.id, note('p')));

    const report = await a.api.flush();
    expect(report.stopped).toBeUndefined();
    expect(await world.row(u1.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'handler_failed',
      blockedDetail: expect.stringContaining('reads as a pending target'),
      payload: note('y'),
    });
    expect(world.server.effectsFor(later.requestId!)).toBe(1);

    broken.on = false;
    await a.api.retry(u1.id);
    await a.api.flush();
    const serverId = world.server.effects[0]!.id;
    expect(world.server.records.get(serverId)?.data).toMatchObject(note('y'));
    expect(await world.rows()).toEqual([]);
  });

  it('10: an edit of a vanished create made after an edit of its server id goes after it: never folded into the orphan intent’s older place (§6.1, G4)', async () => {
    const a = await world.holder('A');
    const { c1, u1 } = await orphanIntent(a);
    const serverId = world.server.effects[0]!.id;
    // The app edits the record by its server id, then again through `pending:<C>`.
    await a.api.enqueue(updateNote(serverId, note('z'), 1));
    const e3 = await a.api.enqueue(updateNote(c1.targetId, note('newest')));
    expect(e3).toMatchObject({ outcome: 'intent' });
    expect((await world.row(e3.id))?.successorOf).toBe(u1.id);
    await a.api.flush();
    await a.api.flush();
    // Three edits applied, in the order made: the intent's, the server id's (answered 412 and
    // rebased, its intent kept), then the newest, which stands.
    expect(world.server.effects.filter((e) => e.method === 'PATCH')).toHaveLength(3);
    expect(world.server.records.get(serverId)?.data).toMatchObject(note('newest'));
    expect(await world.rows()).toEqual([]);
  });

  it('10: an edit of a vanished create made after its orphan intent was blocked does not wait on it: it is resolved on its own (§7, G1)', async () => {
    const { a, broken } = await holderUnableToRead();
    const { c1, u1 } = await orphanIntent(a);
    await a.api.flush();
    expect((await world.row(u1.id))?.blockedCode).toBe('handler_failed');
    broken.on = false;
    const e = await a.api.enqueue(updateNote(c1.targetId, note('newest')));
    expect(e.outcome).toBe('intent');
    await a.api.flush();
    await a.api.flush();
    const serverId = world.server.effects[0]!.id;
    expect(world.server.records.get(serverId)?.data).toMatchObject(note('newest'));
    // The blocked intent stays for the app to retry or discard.
    expect((await world.rows()).map((row) => row.id)).toEqual([u1.id]);
  });

  it('10: an edit linked after an orphan intent that is then blocked is looked up on its own, never left an intent (§7, G1)', async () => {
    const { a, broken } = await holderUnableToRead();
    const { c1, u1 } = await orphanIntent(a);
    // Made while U1 is still queued: it follows U1.
    const e = await a.api.enqueue(updateNote(c1.targetId, note('newest')));
    expect((await world.row(e.id))?.successorOf).toBe(u1.id);
    await a.api.flush();
    // Blocked U1 holds nothing: E is looked up on its own, and ends as U1 did, with the reason.
    expect((await world.row(u1.id))?.blockedCode).toBe('handler_failed');
    expect((await world.row(e.id))?.blockedCode).toBe('handler_failed');
    broken.on = false;
    await a.api.retry(e.id);
    await a.api.flush();
    const serverId = world.server.effects[0]!.id;
    expect(world.server.records.get(serverId)?.data).toMatchObject(note('newest'));
    expect((await world.rows()).map((row) => row.id)).toEqual([u1.id]);
  });

  it('11: a holder that dies mid-send is taken over after the lease; exactly one row and one effect', async () => {
    const a = await world.holder('A');
    const c1 = await a.api.enqueue(createNote(note('x')));
    a.transport.holdAnswers = true;
    void a.api.flush();
    await world.until(() => world.server.seen.length === 1, 'A sent');
    // A dies: its answer never arrives. A restarted worker is a new holder.
    world.clock.advance(LEASE - 1);
    const b = await world.holder('B');
    expect((await b.api.flush()).claimed).toBe(0);
    world.clock.advance(2);
    const report = await b.api.flush();
    expect(report).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(world.log).toContain(`claim:B:${c1.id}:2`);
    expect(world.server.effectsFor(c1.requestId!)).toBe(1);
    expect(await world.rows()).toEqual([]);
    a.transport.release();
    await world.settle();
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects).toHaveLength(1);
  });
});
