import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lookupPredecessors } from '../../shared/core/predecessors.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';
import { legacyRewrite } from '../support/legacy-tab.ts';
import { modelFetch } from '../support/model-fetch.ts';
import { aroundStore } from '../support/store-wrap.ts';

/**
 * The ways a guarantee could be broken that an independent read of the core found, each
 * reproduced through the owner API, the dispatcher and the model server on both stores.
 */

const ORIGIN = 'https://app.test';

/**
 * The store as one owner's holder sees it, watched (G6): every value a point read hands back
 * that belongs to another owner is noted in `foreign`.
 */
function watchedFor(owner: string, foreign: string[]) {
  return (store: OutboxStore): OutboxStore => {
    const note = (what: string, value: unknown) => {
      const of = (value as { owner?: unknown } | undefined)?.owner;
      if (typeof of === 'string' && of !== owner) foreign.push(`${what} of ${of}`);
    };
    const reads: Record<string, (values: unknown) => void> = {
      get: (value) => note('a row', value),
      getMany: (values) => {
        for (const value of values as unknown[]) note('a row', value);
      },
      getReceipt: (value) => note('a receipt', value),
      getTombstone: (value) => note('a tombstone', value),
    };
    return new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        const watch = typeof name === 'string' ? reads[name] : undefined;
        if (watch === undefined) return value.bind(target);
        return async (...args: unknown[]) => {
          const result = await value.apply(target, args);
          watch(result);
          return result;
        };
      },
    });
  };
}

/** A holder that sends through the real fetch transport, its `auth` hook under the test's hand. */
async function fetchHolder(world: World, name: string) {
  const net = modelFetch(world.server, world.clock);
  const auth = {
    calls: 0,
    pending: [] as ((headers: Record<string, string>) => void)[],
    /** Answers every waiting `auth` call. */
    answer() {
      for (const go of this.pending.splice(0)) go({ authorization: `Bearer ${OWNER}` });
    },
  };
  const transport = createFetchTransport({
    auth: () => {
      auth.calls++;
      return new Promise((go) => auth.pending.push(go));
    },
    allowedOrigins: [ORIGIN],
    baseUrl: `${ORIGIN}/sw.js`,
    timeoutMs: LEASE,
    clock: world.clock,
    fetch: net.fetch,
  });
  const holder = await world.holder(name, { transport });
  return { holder, net, auth };
}

/** A stored update of n_1 under `id`, a key of any type: valid but for its key, so it is corrupt. */
function corruptUpdate(id: unknown, savedAt: number) {
  return {
    id,
    owner: OWNER,
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    savedAt,
    state: 'queued',
  };
}

describe.each(STORE_KINDS)('guarantees on the %s store', (kind) => {
  let world: World;
  beforeEach(async () => {
    world = await World.create(kind);
  });
  afterEach(() => world?.close());

  it('G3: a request whose auth hook outlasts its claim never leaves, so it cannot land over the newer edit', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await fetchHolder(world, 'A');
    const b = await world.holder('B');
    await a.holder.api.enqueue(updateNote(record.id, { title: 'old' }));
    const flushA = a.holder.api.flush();
    await world.until(() => a.auth.calls === 1, 'A awaits its auth hook');
    // The hook is slow: A's claim runs out, so the row is no longer in flight for anyone.
    world.clock.advance(LEASE + 1);
    await b.api.enqueue(updateNote(record.id, { title: 'new' }));
    await b.api.flush();
    expect(world.server.records.get(record.id)?.data.title).toBe('new');
    a.auth.answer();
    await flushA;
    // A's old bytes would overwrite 'new' (no If-Match): nothing of A's may reach the wire.
    expect(a.net.wire).toEqual([]);
    expect(world.server.records.get(record.id)?.data.title).toBe('new');
  });

  it('G4: a legacy tab that sends an edit of the record while a claimed row awaits its auth hook keeps that row off the wire until it settles', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await fetchHolder(world, 'A');
    const u1 = await a.holder.api.enqueue(updateNote(record.id, { title: 'one' }));
    const flushA = a.holder.api.flush();
    await world.until(() => a.auth.calls === 1, 'A awaits its auth hook');
    // The claim saw no other row of the record. Now an old tab, which knows nothing of claims
    // (§17), writes its own edit of the record and puts it on the wire at once.
    const raw = (await a.holder.store.get(u1.id)) as OutboxRow;
    const {
      v: _v,
      seq: _seq,
      claim: _claim,
      writer: _writer,
      evidence: _evidence,
      successorOf: _link,
      ...fields
    } = raw;
    const legacy = {
      ...fields,
      id: 'v0-edit-1',
      payload: { title: 'legacy' },
      state: 'sending',
      sentAt: world.clock.now(),
      request: { ...raw.request!, requestId: 'v0-edit-1' },
    };
    expect(
      await a.holder.store.replace({
        owner: OWNER,
        expected: [{ id: legacy.id, row: null }],
        put: [legacy],
        reason: 'legacy',
      }),
    ).toBe('committed');
    a.auth.answer();
    await flushA;
    // Two rows of one record are never on the wire at once (§6.1): U1 gives its claim back.
    expect(a.net.wire).toEqual([]);
    expect(await world.row(u1.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'record_busy' },
    });
    // The tab's request is answered and it deletes its row: U1 goes after it.
    await legacyRewrite(a.holder.store, await a.holder.store.get(legacy.id));
    const next = a.holder.api.flush({ force: true });
    await world.until(() => a.auth.calls === 2, 'A awaits its auth hook again');
    a.auth.answer();
    await next;
    expect(a.net.wire.map((w) => w.key)).toEqual([u1.requestId]);
  });

  it('G4: an edit made while a successor is in flight goes after it, even beside its blocked predecessor', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const b = await world.holder('B');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'one' }));
    const flushA = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { title: 'two' }));
    expect(u2.outcome).toBe('successor');
    // U1 is rejected; U2, no longer held by it, is claimed and waits at the door: in flight.
    world.server.inject('reject');
    a.transport.beforeSend = async (request) => {
      if (request.requestId === u1.requestId) a.transport.close();
    };
    a.transport.open();
    await world.until(() => world.log.includes(`claim:A:${u2.id}:1`), 'U2 in flight');
    expect(await world.row(u1.id)).toMatchObject({ state: 'blocked', blockedCode: 'http_422' });
    const u3 = await b.api.enqueue(updateNote(record.id, { title: 'three' }));
    expect(u3.outcome).toBe('successor');
    expect(await world.row(u3.id)).toMatchObject({ successorOf: u2.id });
    // Another holder must not send U3 while U2 is on its way.
    await b.api.flush();
    expect(world.server.seen.map((s) => s.key)).toEqual([u1.requestId]);
    a.transport.open();
    await flushA;
    await b.api.flush();
    expect(world.server.effects.map((e) => e.key)).toEqual([u2.requestId, u3.requestId]);
    expect(world.server.records.get(record.id)?.data.title).toBe('three');
    // The rejected payload was not resent inside a merge.
    expect(world.server.seen.filter((s) => s.key === u1.requestId)).toHaveLength(1);
    expect(await world.row(u1.id)).toMatchObject({ state: 'blocked' });
  });

  /** A holder whose `readReceipt` throws: the server applies, the answer cannot be read. */
  async function unreadableReceipts(name: string) {
    return world.holder(name, {
      handlers: world.handlers({
        readReceipt: () => {
          throw new Error('receipt parser broke');
        },
      }),
    });
  }

  it.each([
    { edit: 'update', intent: (c: string) => updateNote(c, { title: 'edited' }), title: 'edited' },
    { edit: 'delete', intent: (c: string) => deleteNote(c), title: undefined },
  ])(
    'G2: a create the server applied, whose answer could not be read, is never merged or cancelled by a later $edit',
    async ({ edit, intent, title }) => {
      const broken = await unreadableReceipts('A');
      const created = await broken.api.enqueue(createNote({ title: 'draft' }));
      await broken.api.flush();
      expect(await world.row(created.id)).toMatchObject({
        state: 'blocked',
        blockedCode: 'handler_failed',
      });
      expect(world.server.effects).toHaveLength(1);
      const next = await broken.api.enqueue(intent(created.targetId));
      expect(next.outcome).toBe('intent');
      expect(await world.row(created.id)).toMatchObject({ state: 'blocked' });
      await broken.api.flush();
      expect(world.server.effects).toHaveLength(1);
      // The handler is fixed (a new worker): retrying the create replays its key, then the edit goes.
      const fixed = await world.holder('B');
      await fixed.api.retry(created.id);
      await fixed.api.flush();
      await fixed.api.flush();
      const posts = world.server.effects.filter((e) => e.method === 'POST');
      expect(posts.map((e) => e.key)).toEqual([created.requestId]);
      expect(world.server.records.size).toBe(1);
      const stored = world.server.records.get(posts[0]!.id)!;
      expect(edit === 'delete' ? stored.deleted : stored.data.title).toBe(
        edit === 'delete' ? true : title,
      );
      expect(await world.rows()).toEqual([]);
    },
  );

  it('G2: an update whose answer was lost is never merged into the next edit: that edit is its successor', async () => {
    const record = world.server.seed(OWNER, { title: 'a', count: 0 });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'one' }, 1));
    world.server.inject('drop');
    await a.api.flush();
    expect(world.server.effectsFor(u1.requestId!)).toBe(1);
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'two' }, 1));
    expect(u2.outcome).toBe('successor');
    await a.api.flush({ force: true });
    // U1 is resent with its own key (a replay); U2 goes on the revision U1 produced: no conflict.
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2.requestId]);
    expect(await a.api.conflicts()).toEqual([]);
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 3,
      data: { title: 'one', body: 'two' },
    });
  });

  it.each([
    { failure: 'fail503', outcome: 'coalesced' },
    { failure: 'network', outcome: 'successor' },
  ] as const)(
    'G5: a conflict successor whose send met $failure keeps its evidence when the next edit comes ($outcome)',
    async ({ failure, outcome }) => {
      const record = world.server.seed(OWNER, { title: 'a' });
      world.server.editElsewhere(record.id, { title: 'theirs' });
      const a = await world.holder('A');
      const u1 = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
      a.transport.beforeSend = async (request) => {
        if (request.requestId !== u1.requestId) {
          world.server.inject(failure);
          a.transport.beforeSend = undefined;
        }
      };
      await a.api.flush();
      const [successor] = await world.rows();
      expect(successor).toMatchObject({
        successorOf: u1.id,
        state: 'queued',
        conflict: { version: 1 },
      });
      const u2 = await a.api.enqueue(updateNote(record.id, { body: 'more' }, 3));
      expect(u2.outcome).toBe(outcome);
      await a.api.flush({ force: true });
      await a.api.flush({ force: true });
      expect(await world.rows()).toEqual([]);
      const ledger = await a.api.conflicts();
      expect(ledger).toHaveLength(1);
      expect(ledger[0]).toMatchObject({ originalId: u1.requestId, overwrittenRevision: 2 });
      expect(world.server.records.get(record.id)?.data).toMatchObject({
        title: 'mine',
        body: 'more',
      });
    },
  );

  /** A value of the owner's written straight into the store that fails to parse. */
  async function plantCorrupt(id: string, fields: Record<string, unknown>) {
    const raw = {
      v: 1,
      id,
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      savedAt: world.clock.now() - 10,
      state: 'queued',
      payload: { title: 'lost?' },
      baseRevision: 'three',
      ...fields,
    };
    const store = world.holders[0]!.store;
    await store.replace({
      owner: OWNER,
      expected: [{ id, row: null }],
      put: [raw],
      reason: 'test',
    });
    return raw;
  }

  it.each([
    { of: 'a record', pending: false },
    { of: 'a pending create', pending: true },
  ])(
    'G7: an edit of $of never absorbs a quarantined corrupt row: it keeps its raw value',
    async ({ pending }) => {
      const a = await world.holder('A');
      let targetId = world.server.seed(OWNER, { title: 'a' }).id;
      let createId: string | undefined;
      if (pending) {
        // A create whose answer was lost: edits of it wait as intents.
        const created = await a.api.enqueue(createNote({ title: 'draft' }));
        world.server.inject('network');
        await a.api.flush();
        targetId = created.targetId;
        createId = created.id;
      }
      const raw = await plantCorrupt('notes-0000000000000000000bad01', { targetId });
      await a.api.flush();
      expect(await world.row('notes-0000000000000000000bad01')).toMatchObject({
        state: 'blocked',
        blockedCode: 'row_corrupt',
        raw,
      });
      const edit = await a.api.enqueue(updateNote(targetId, { body: 'new' }));
      expect(edit.outcome).toBe(pending ? 'intent' : 'successor');
      // An intent waits on its create (§8); an edit of a record goes after the quarantined row.
      expect(await world.row(edit.id)).toMatchObject({
        successorOf: createId ?? 'notes-0000000000000000000bad01',
      });
      await a.api.flush({ force: true });
      await a.api.flush({ force: true });
      expect(await world.row('notes-0000000000000000000bad01')).toMatchObject({
        blockedCode: 'row_corrupt',
        raw,
      });
      expect((await world.rows()).map((row) => row.id)).toEqual(['notes-0000000000000000000bad01']);
      expect([...world.server.records.values()].some((r) => r.data.body === 'new')).toBe(true);
    },
  );

  it.each([
    { taken: 'a row', settle: false, cancel: false },
    { taken: 'a receipt', settle: true, cancel: false },
    { taken: 'a tombstone', settle: false, cancel: true },
  ])(
    "G6: an id another owner's $taken holds is refused as taken, and nothing of theirs is handed back or changed",
    async ({ settle, cancel }) => {
      const a = await world.holder('A');
      const b = await world.holder('B', { owner: 'user-2' });
      const theirs = await a.api.enqueue(createNote({ title: 'theirs' }));
      if (settle) await a.api.flush();
      if (cancel) await a.api.enqueue(deleteNote(theirs.targetId));
      const mine = async () => ({
        rows: await world.rows(),
        receipt: await a.store.getReceipt(theirs.requestId ?? theirs.id, OWNER),
        tombstone: await a.store.getTombstone(theirs.id, OWNER),
      });
      const before = await mine();
      // Ids are keys shared by every owner: the check reads the key whoever's it is, since
      // writing under it would replace another owner's value; it answers only "taken".
      const refused = await b.api.enqueue({ ...createNote({ title: 'mine' }), id: theirs.id }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({ code: 'invalid_id', details: { id: theirs.id } });
      expect(Object.keys((refused as { details: object }).details)).toEqual(['id']);
      expect(await mine()).toEqual(before);
      expect(await world.rows('user-2')).toEqual([]);
    },
  );

  it.each([
    { create: 'settled with a receipt' },
    { create: 'still queued' },
    { create: 'cancelled' },
  ])(
    "G6: an edit of another owner's pending create ($create) reads nothing of that owner and is not retargeted",
    async ({ create }) => {
      const a = await world.holder('A');
      const foreign: string[] = [];
      const b = await world.holder('B', {
        owner: 'user-2',
        wrapStore: watchedFor('user-2', foreign),
      });
      const created = await a.api.enqueue(createNote({ title: 'theirs' }));
      if (create === 'settled with a receipt') await a.api.flush();
      if (create === 'cancelled') await a.api.enqueue(deleteNote(created.targetId));
      const edit = await b.api.enqueue(updateNote(created.targetId, { title: 'mine' }));
      expect(edit).toMatchObject({ outcome: 'intent', targetId: created.targetId });
      expect(await world.row(edit.id)).toMatchObject({
        owner: 'user-2',
        targetId: created.targetId,
        successorOf: created.id,
      });
      expect(await world.row(edit.id)).not.toHaveProperty('request');
      await b.api.flush();
      expect(world.server.seen.filter((s) => s.owner === 'user-2')).toEqual([]);
      expect(foreign).toEqual([]);
    },
  );

  it('G7: a corrupt value stored under a number key is quarantined once, raw value kept, and shows in rows() and stats()', async () => {
    const attempts: string[] = [];
    const a = await world.holder('A', {
      wrapStore: aroundStore('replace', (replace, plan) => {
        if (plan.reason === 'quarantine') attempts.push(plan.reason);
        return replace(plan);
      }),
    });
    const raw = corruptUpdate(5, world.clock.now());
    await a.store.replace({ owner: OWNER, expected: [], put: [raw], reason: 'test' });
    const other = await a.api.enqueue(createNote({ title: 'fine' }));
    await a.api.flush();
    await a.api.flush();
    expect(attempts).toHaveLength(1);
    const views = await a.api.rows();
    expect(views.map((v) => [v.id, v.status])).toEqual([['5', 'blocked']]);
    expect(views[0]!.row).toMatchObject({ blockedCode: 'row_corrupt', raw });
    expect((await a.api.stats()).counts.blocked).toBe(1);
    expect(world.server.effectsFor(other.requestId!)).toBe(1);
    // It can be discarded like any quarantined row.
    await a.api.discard('5');
    expect(await a.api.rows()).toEqual([]);
  });

  it('G3, G7: corrupt values under keys that print alike (two Dates of one second, an array and a string) are each quarantined under a name of their own, and discarding one leaves the others', async () => {
    const a = await world.holder('A');
    const value = (id: unknown) => corruptUpdate(id, world.clock.now());
    const keys = [
      new Date('2023-11-14T22:13:20.001Z'),
      new Date('2023-11-14T22:13:20.005Z'),
      ['corrupt', 2],
      'corrupt,2',
    ];
    for (const key of keys)
      await a.store.replace({ owner: OWNER, expected: [], put: [value(key)], reason: 'test' });
    await a.api.flush();
    const names = (await a.api.rows()).map((v) => v.id).sort();
    expect(names).toEqual(
      [
        'corrupt,2',
        'date:2023-11-14T22:13:20.001Z',
        'date:2023-11-14T22:13:20.005Z',
        '["corrupt",2]',
      ].sort(),
    );
    await a.api.discard('date:2023-11-14T22:13:20.001Z');
    await a.api.flush();
    const left = await a.api.rows();
    expect(left.map((v) => v.id).sort()).toEqual(
      ['corrupt,2', 'date:2023-11-14T22:13:20.005Z', '["corrupt",2]'].sort(),
    );
    // The two left under keys that are not strings stay quarantined; the string key's value
    // reads as the row it is, under its own id.
    const status = new Map(left.map((v) => [v.id, v.status]));
    expect(status.get('date:2023-11-14T22:13:20.005Z')).toBe('blocked');
    expect(status.get('["corrupt",2]')).toBe('blocked');
  });

  it('G1: a holder whose clock is behind merges the edit that fixes a rejected create instead of waiting on a claim that ended', async () => {
    const a = await world.holder('A');
    const behind = { now: () => world.clock.now() - 5_000 };
    const b = await world.holder('B', { clock: behind });
    const created = await a.api.enqueue(createNote({ title: '' }));
    world.server.inject('reject');
    await a.api.flush();
    expect(await world.row(created.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'http_422',
    });
    const fix = await b.api.enqueue(updateNote(created.targetId, { title: 'named' }));
    expect(fix.outcome).toBe('coalesced');
    await b.api.flush();
    expect([...world.server.records.values()].map((r) => r.data.title)).toEqual(['named']);
    expect(await world.rows()).toEqual([]);
  });

  it('G4: an edit waiting on an edit that conflicted many times keeps waiting on its latest resend', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'later' }, 1));
    expect(u2.outcome).toBe('successor');
    // Another device edits the note before each of our writes: every resend conflicts.
    let busy = true;
    world.server.beforeApply = () => {
      if (busy) world.server.editElsewhere(record.id);
    };
    a.transport.open();
    await flush;
    while (world.log.filter((l) => l.startsWith('conflict:')).length < 10)
      await a.api.flush({ force: true });
    busy = false;
    const views = await a.api.rows();
    expect(views.map((v) => v.status).sort()).toEqual(['deferred', 'waiting']);
    expect(views.find((v) => v.id === u2.id)?.status).toBe('waiting');
    await a.api.flush({ force: true });
    await a.api.flush({ force: true });
    // U1's last resend lands first, then U2's (its own resend: it was made from revision 1).
    expect(world.server.effects).toHaveLength(2);
    const ledger = await a.api.conflicts();
    expect(ledger.map((e) => e.originalId)).toEqual([u2.requestId, u1.requestId]);
    expect(ledger.map((e) => e.successorId)).toEqual(
      world.server.effects.map((e) => e.key).reverse(),
    );
    expect(world.server.records.get(record.id)?.data).toMatchObject({
      title: 'mine',
      body: 'later',
    });
  });

  it('G7: a flush reads each tombstone of a long conflict chain once, however often it looks', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const read: string[] = [];
    let counting = false;
    const a = await world.holder('A', {
      wrapStore: aroundStore('getTombstone', (own, id, owner) => {
        if (counting) read.push(id);
        return own(id, owner);
      }),
    });
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    const flush = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'later' }, 1));
    expect(u2.outcome).toBe('successor');
    // Another device edits the note before each of our writes: every resend conflicts, and the
    // edit made after the first waits on a chain of resends one longer after each conflict.
    world.server.beforeApply = () => world.server.editElsewhere(record.id);
    a.transport.open();
    await flush;
    const conflicts = () => world.log.filter((l) => l.startsWith('conflict:')).length;
    while (conflicts() < 9) await a.api.flush({ force: true });
    const before = conflicts();
    counting = true;
    const report = await a.api.flush({ force: true });
    counting = false;
    // Three resends and a look at the chain after each: the first look reads the ten hops there,
    // each later one only the hop just added (at most twice, by the two walks that meet it).
    expect(report.stopped).toBe('conflict_storm');
    expect(conflicts() - before).toBe(3);
    const hops = new Set(read).size;
    expect(hops).toBeGreaterThanOrEqual(10);
    expect(read.length).toBeLessThan(hops + 2 * 4);
  });

  it('G7: a cycle of superseded tombstones ends the predecessor walk instead of looping', async () => {
    const { store } = await world.holder('A');
    const tomb = (id: string, into: string) => ({
      id,
      owner: OWNER,
      reason: 'superseded' as const,
      into,
      at: 1,
    });
    await store.replace({
      owner: OWNER,
      expected: [],
      tombstones: [
        tomb('notes-cycle-00000001', 'notes-cycle-00000002'),
        tomb('notes-cycle-00000002', 'notes-cycle-00000001'),
      ],
      reason: 'test',
    });
    const lookup = await lookupPredecessors(store, OWNER, ['notes-cycle-00000001'], new Map());
    expect(lookup('notes-cycle-00000001')).toBe('absent');
  });

  it('G4: an edit converted late by orphan recovery still goes before a later edit of the record in another batch', async () => {
    const a = await world.holder('A', { batchSize: 1 });
    const created = await a.api.enqueue(createNote({ title: 'draft' }));
    world.server.inject('drop');
    await a.api.flush();
    world.clock.advance(1);
    // An edit of the pending create waits as an intent; its id sorts after any the engine makes.
    const intent = await a.api.enqueue({
      ...updateNote(created.targetId, { title: 'old' }),
      id: 'notes-zzzzzzzzzzzzzzzzzzzzzzzz',
    });
    expect(intent.outcome).toBe('intent');
    // A legacy tab resends the create, gets its answer and removes the row, converting nothing.
    await legacyRewrite(a.store, await a.store.get(created.id));
    const [record] = [...world.server.records.values()];
    world.clock.advance(1);
    // The app learned the server id elsewhere and edits the record by it: no link to the intent.
    const later = await a.api.enqueue(updateNote(record!.id, { title: 'new' }));
    expect(later.outcome).toBe('queued');
    await a.api.flush();
    await a.api.flush();
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.at(-1)?.key).toBe(later.requestId);
    expect(world.server.records.get(record!.id)?.data.title).toBe('new');
  });

  it('G5: an edit made while an ACK is planned is rebased with it, not sent into a conflict with its own predecessor', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const broken = await unreadableReceipts('A');
    const u0 = await broken.api.enqueue(updateNote(record.id, { title: 'zero' }, 1));
    await broken.api.flush();
    expect(await world.row(u0.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'handler_failed',
    });
    let u2: Awaited<ReturnType<typeof broken.api.enqueue>> | undefined;
    let acks = 0;
    const b = await world.holder('B', {
      wrapStore: aroundStore('replaceEach', async (replaceEach, plans) => {
        // The user edits again between the ACK's reads and its commit.
        if (plans.some((p) => p.receipts?.[0]?.requestId === u1.requestId) && ++acks === 2)
          u2 = await broken.api.enqueue(updateNote(record.id, { body: 'two' }, 2));
        return replaceEach(plans);
      }),
    });
    const u1 = await b.api.enqueue(updateNote(record.id, { title: 'one' }, 2));
    expect(u1.outcome).toBe('successor');
    await b.api.flush();
    await b.api.flush();
    expect(u2?.outcome).toBe('successor');
    expect(await b.api.conflicts()).toEqual([]);
    expect(world.server.effects.map((e) => e.key)).toEqual([
      u0.requestId,
      u1.requestId,
      u2?.requestId,
    ]);
    expect(world.server.records.get(record.id)).toMatchObject({
      revision: 4,
      data: { title: 'one', body: 'two' },
    });
  });

  it('G1: an intent written while a create’s ACK is planned is converted with it, never left behind', async () => {
    const a = await world.holder('A');
    let created: Awaited<ReturnType<typeof a.api.enqueue>> | undefined;
    let acks = 0;
    const leftBehind: unknown[][] = [];
    const b = await world.holder('B', {
      wrapStore: (store) =>
        aroundStore('replaceEach', async (replaceEach, plans) => {
          const ack = plans.find((p) => p.receipts?.[0]?.requestId === created?.requestId);
          if (ack !== undefined && ++acks === 2)
            await a.api.enqueue({ ...updateNote(created!.targetId, {}), kind: 'archive' });
          const results = await replaceEach(plans);
          if (ack !== undefined && results[plans.indexOf(ack)] === 'committed')
            leftBehind.push(await store.byTarget(OWNER, 'notes', created!.targetId));
          return results;
        })(store),
    });
    created = await b.api.enqueue(createNote({ title: 'new' }));
    const flush = (await world.holdInFlight(b, created.id)).done;
    const first = await a.api.enqueue(updateNote(created.targetId, { title: 'renamed' }));
    expect(first.outcome).toBe('intent');
    b.transport.open();
    await flush;
    expect(acks).toBeGreaterThanOrEqual(2);
    expect(leftBehind).toEqual([[]]);
    await b.api.flush();
    expect(world.server.effects.map((e) => e.method)).toEqual(['POST', 'PATCH', 'PATCH']);
  });

  it('G7: a row of a format version this bundle does not know is left alone, shown as unknown, and a new edit goes at once (§6)', async () => {
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const newer = {
      v: 2,
      id: 'notes-0000000000000000000000v2',
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      targetId: record.id,
      savedAt: world.clock.now() - 10,
      state: 'queued',
      payload: { title: 'from a newer bundle' },
      request: { requestId: 'notes-0000000000000000000000v2', format: 'v2 request' },
    };
    await a.store.replace({ owner: OWNER, expected: [], put: [newer], reason: 'test' });
    await a.api.flush({ force: true });
    expect(await a.store.get(newer.id)).toEqual(newer);
    expect(world.server.seen).toEqual([]);
    const views = await a.api.rows();
    expect(views.map((v) => [v.id, v.status])).toEqual([[newer.id, 'unknown']]);
    expect(views[0]!.row).toMatchObject({ v: 2, state: 'queued' });
    expect((await a.api.stats()).counts.unknown).toBe(1);
    const edit = await a.api.enqueue(updateNote(record.id, { body: 'mine' }));
    expect(edit.outcome).toBe('successor');
    expect(await world.row(edit.id)).toMatchObject({ successorOf: newer.id });
    // "A new edit of that record is written as its successor (and goes at once: a blocked
    // predecessor does not hold its successors, §7)": the newer bundle sends its own row.
    await a.api.flush({ force: true });
    expect(world.server.seen.map((s) => s.key)).toEqual([edit.requestId]);
    expect(await a.store.get(newer.id)).toEqual(newer);
    expect(await a.api.row(edit.id)).toBeUndefined();
  });

  it.each([
    { policy: 'rebase' as const, base: 1 },
    { policy: 'block' as const, base: 1 },
    { policy: 'rebase' as const, base: undefined },
    { policy: 'block' as const, base: undefined },
  ])(
    'G4: retrying a rejected edit after its successor was applied meets it through the conflict rule ($policy, base revision $base), with what the server answered, never silently over it',
    async ({ policy, base }) => {
      const record = world.server.seed(OWNER, { title: 'a' });
      const a = await world.holder('A', { handlers: world.handlers({ conflict: policy }) });
      const u1 = await a.api.enqueue(updateNote(record.id, { title: 'one' }, base));
      const flush = (await world.holdInFlight(a, u1.id)).done;
      // Made on top of U1, from the same revision.
      const u2 = await a.api.enqueue(updateNote(record.id, { title: 'two' }, base));
      world.server.inject('reject');
      a.transport.open();
      await flush;
      expect(world.server.records.get(record.id)).toMatchObject({
        revision: 2,
        data: { title: 'two' },
      });
      expect(await world.row(u1.id)).toMatchObject({ state: 'blocked', blockedCode: 'http_422' });
      await a.api.retry(u1.id);
      await a.api.flush();
      expect(world.server.effects.map((e) => e.key)).not.toContain(u1.requestId);
      expect(world.server.effectsFor(u2.requestId!)).toBe(1);
      if (base === undefined) {
        // No revision for the server to check: resent, U1's old bytes would land over U2's value.
        // It stays blocked for the app, with no evidence of a conflict the server never answered.
        expect(world.server.seen.filter((s) => s.key === u1.requestId)).toHaveLength(1);
        const row = await world.row(u1.id);
        expect(row).toMatchObject({ state: 'blocked', blockedCode: 'revision_conflict' });
        expect(row).not.toHaveProperty('conflict');
        expect(world.server.records.get(record.id)?.data.title).toBe('two');
        expect(await a.api.conflicts()).toEqual([]);
        return;
      }
      // Resent as it is, its If-Match meets the server's 412: the conflict rule runs on that.
      expect(world.server.seen.filter((s) => s.key === u1.requestId)).toHaveLength(2);
      if (policy === 'rebase') {
        const [entry] = await a.api.conflicts();
        expect(entry).toMatchObject({
          originalId: u1.requestId,
          overwrittenRevision: 2,
          finalRevision: 3,
        });
        expect(world.server.records.get(record.id)?.data.title).toBe('one');
      } else {
        expect(await world.row(u1.id)).toMatchObject({
          state: 'blocked',
          blockedCode: 'revision_conflict',
          conflict: { failure: { status: 412, currentRevision: 2 } },
        });
        expect(world.server.records.get(record.id)?.data.title).toBe('two');
      }
    },
  );
});
