import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EnqueueResult } from '../../shared/model/page-api.ts';
import type { Transport, TransportResult } from '../../shared/model/ports.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import type { OutboxStore, ReplaceResult } from '../../shared/model/store.ts';
import { buildRowRequest } from '../../shared/plan/identity.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { type Holder, LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';
import { legacyRewrite } from '../support/legacy-tab.ts';
import { aroundStore, type Gate, passGate } from '../support/store-wrap.ts';

/**
 * Ways to break a guarantee that the simulation of SPEC §20 found in the fixed core, each
 * reproduced here through the owner API and the dispatcher on both stores.
 */

/** A store whose enqueue commits wait at a gate the test opens. */
const gatedEnqueues = (gate: Gate) =>
  aroundStore('replace', async (replace, plan) => {
    if (plan.reason === 'enqueue') await passGate(gate);
    return replace(plan);
  });

/** A store whose retry commits wait at a gate while it is closed. */
const gatedRetries = (gate: Gate) =>
  aroundStore('replace', async (replace, plan) => {
    if (plan.reason === 'retry') await passGate(gate);
    return replace(plan);
  });

/** A store whose next success ACK fails, as IndexedDB may when the device is short of space. */
const failingNextAck = (state: { armed: boolean }) =>
  aroundStore('replaceEach', async (replaceEach, plans) => {
    if (state.armed && plans.some((p) => p.reason === 'settle' && p.receipts?.length)) {
      state.armed = false;
      throw new DOMException('quota exceeded', 'QuotaExceededError');
    }
    return replaceEach(plans);
  });

/** A store whose record reads (`byTarget`) wait at a gate while it is armed. */
const gatedRecordReads = (gate: Gate) =>
  aroundStore('byTarget', async (byTarget, ...args) => {
    await passGate(gate);
    return byTarget(...args);
  });

/** A store whose claims wait at a gate while it is closed. */
const gatedClaims = (gate: Gate) =>
  aroundStore('replaceEach', async (replaceEach, plans) => {
    if (plans.some((p) => p.reason === 'claim')) await passGate(gate);
    return replaceEach(plans);
  });

/**
 * Writes an edit of `targetId` as a tab of the old bundle queues it (§17): no `v`, no link to
 * the rows before it, saved at `savedAt` by that tab's clock. Returns its id, which is its
 * request id.
 */
async function writeLegacyEdit(
  world: World,
  targetId: string,
  payload: Record<string, string>,
  savedAt = world.clock.now(),
): Promise<string> {
  const id = 'legacy-edit-0001';
  const intent = { collection: 'notes', kind: 'update', targetId, payload, baseRevision: null };
  const request = restHandler({ baseUrl: '/api/notes' }).toRequest(intent);
  await world.holders[0]!.store.replace({
    owner: OWNER,
    expected: [{ id, row: null }],
    put: [
      {
        ...intent,
        id,
        owner: OWNER,
        savedAt,
        state: 'queued',
        request: buildRowRequest(request, id, null),
      },
    ],
    reason: 'legacy',
  });
  return id;
}

/** A 429 with `Retry-After: 1`, as a test transport answers in place of the server's answer. */
const tooManyRequests = (): TransportResult => ({
  kind: 'response',
  status: 429,
  headers: { 'retry-after': '1' },
  body: '{"type":"too-many"}',
});

/** A page sender with no credentials: every claimed row is held, nothing leaves. */
const noCredentials: Transport = {
  send: async () => ({ kind: 'auth_unavailable' }),
  lookupReceipt: async () => ({ kind: 'error', message: 'offline' }),
};

describe.each(STORE_KINDS)('what the simulation found, on the %s store', (kind) => {
  let world: World;
  beforeEach(async () => {
    world = await World.create(kind);
  });
  afterEach(() => world.close());

  /**
   * Where most findings start: a note on the server, and holder A (made with `options`) with U1,
   * an edit of it, queued.
   */
  async function firstEdit(
    payload: Record<string, string>,
    { baseRevision, ...options }: Parameters<World['holder']>[1] & { baseRevision?: number } = {},
  ) {
    const record = world.server.seed(OWNER, { title: 'seed' });
    const a = await world.holder('A', options);
    const u1 = await a.api.enqueue(updateNote(record.id, payload, baseRevision));
    return { record, a, u1 };
  }

  /**
   * U1 on the wire, U2 (`{ body: 'second' }`) made meanwhile as its successor, then U1 rejected
   * and blocked — a row that holds nothing, so U2 goes next — with `after` the server's faults for
   * the requests that follow.
   */
  async function rejectedBeforeItsSuccessor(
    payload: Record<string, string>,
    after: Parameters<World['server']['inject']> = [],
    options: Parameters<typeof firstEdit>[1] = {},
  ) {
    const { record, a, u1 } = await firstEdit(payload, options);
    const inFlight = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }));
    expect(u2.outcome).toBe('successor');
    world.server.inject('reject', ...after);
    a.transport.open();
    await inFlight;
    return { record, a, u1, u2 };
  }

  /** U3 comes after U2: it must not carry the rejected U1's fields over U2's (G4). */
  async function expectThirdOverSecond(a: Holder, recordId: string) {
    const u3 = await a.api.enqueue(updateNote(recordId, { tag: 'third' }));
    expect(u3.outcome).not.toBe('coalesced');
    await a.api.flush();
    expect(world.server.records.get(recordId)?.data).toEqual({
      title: 'seed',
      body: 'second',
      tag: 'third',
    });
  }

  /** Handlers whose app code cannot read the first `count` answers, which the server applied. */
  function unreadableAnswers(count: number) {
    let failing = count;
    return world.handlers({
      readReceipt: () => {
        if (failing === 0) return {};
        failing--;
        throw new Error('the app cannot read this answer');
      },
    });
  }

  /**
   * A tab of the old bundle sends row `id` as it is: the server applies it, the answer is lost,
   * and the tab puts the row back, queued with its sentAt (it knows nothing of evidence).
   * Returns how the tab's two rewrites came out.
   */
  async function legacySendLost(store: OutboxStore, id: string): Promise<ReplaceResult[]> {
    const raw = (await store.get(id)) as Record<string, unknown>;
    const sending = { ...raw, state: 'sending', sentAt: world.clock.now() };
    const taken = await legacyRewrite(store, raw, sending);
    world.server.handle((await world.row(id))!.request!, OWNER);
    return [taken, await legacyRewrite(store, sending, { ...sending, state: 'queued' })];
  }

  /**
   * After the lease B, with no credentials, takes U1 over and has nothing to send it with: U1 is
   * held, unsent. U1 may have been applied, so the next edit of its record is its successor, not
   * merged into it under a new key; then the app resumes the held row. Returns that edit.
   */
  async function heldThenEdited(a: Holder, b: Holder, targetId: string, u1: EnqueueResult) {
    world.clock.advance(LEASE + 1);
    await b.api.flush();
    expect((await world.row(u1.id))?.state).toBe('held');
    const u2 = await a.api.enqueue(updateNote(targetId, { body: 'second' }));
    expect(u2.outcome).toBe('successor');
    await a.api.resumeHeld();
    return u2;
  }

  /** The request ids sent so far, by any holder, in order. */
  const sentKeys = () =>
    world.log
      .filter((line) => line.startsWith('send:'))
      .map((line) => line.replace(/^send:\w+:/, ''));

  /**
   * U1 may have been applied: the next edit of its record is its successor, and after the lease
   * both go, U1 first, and nothing is left.
   */
  async function expectNextEditAfter(a: Holder, targetId: string, u1: EnqueueResult) {
    const u2 = await a.api.enqueue(updateNote(targetId, { body: 'second' }));
    expect(u2.outcome).toBe('successor');
    world.clock.advance(LEASE + 1);
    await a.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2.requestId]);
  }

  it('G4: two edits of one record enqueued at once never both land blind: the later one merges with the earlier', async () => {
    const record = world.server.seed(OWNER, { title: 'seed' });
    const gate: Gate = { waiting: [], open: false };
    const a = await world.holder('A', { wrapStore: gatedEnqueues(gate) });
    const b = await world.holder('B', { wrapStore: gatedEnqueues(gate) });
    // Two tabs edit the same note at the same moment: both read the record while it is empty.
    const first = a.api.enqueue(updateNote(record.id, { title: 'first' }));
    const second = b.api.enqueue(updateNote(record.id, { body: 'second' }));
    await world.until(() => gate.waiting.length === 2, 'both enqueues planned');
    gate.waiting.shift()!();
    expect((await first).outcome).toBe('queued');
    // The second commit must see the first edit's row: its record is no longer what it read.
    gate.open = true;
    gate.waiting.shift()!();
    expect((await second).outcome).toBe('coalesced');
    const rows = await world.rows();
    expect(rows.map((row) => [row.targetId, row.payload])).toEqual([
      [record.id, { title: 'first', body: 'second' }],
    ]);
  });

  it('G2: an attempt that never settled stays unknown after a later attempt that sent nothing, so the next edit is its successor', async () => {
    const ack = { armed: true };
    const { record, a, u1 } = await firstEdit(
      { title: 'first' },
      { wrapStore: failingNextAck(ack) },
    );
    const b = await world.holder('B', { transport: noCredentials });
    // The server applies U1; A cannot store the ACK: U1 stays claimed, its outcome never written.
    await a.api.flush();
    expect(world.server.effectsFor(u1.requestId!)).toBe(1);
    expect((await world.row(u1.id))?.state).toBe('sending');
    // B takes U1 over and holds it; U1 was applied, so the next edit is its successor.
    const u2 = await heldThenEdited(a, b, record.id, u1);
    world.clock.advance(LEASE + 1);
    await a.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2.requestId]);
  });

  it('G1: an edit of a pending create planned on a stale view of the create is planned again, never left waiting on a create that is gone', async () => {
    const gate: Gate = { waiting: [], open: true };
    // A's clock is half a second behind B's: what A saves sorts before what B saved.
    const behind = { now: () => world.clock.now() - 500 };
    const a = await world.holder('A', { clock: behind, wrapStore: gatedRecordReads(gate) });
    const b = await world.holder('B');
    const create = await b.api.enqueue(createNote({ title: 'draft' }));
    world.server.inject('fail503');
    await b.api.flush();
    expect((await world.row(create.id))?.evidence?.lastErrorCode).toBe('http_503');
    // A's edit is planned while B merges the create with a new edit.
    gate.open = false;
    const late = a.api.enqueue(updateNote(`pending:${create.id}`, { body: 'from A' }));
    await world.until(() => gate.waiting.length === 1, 'A planning');
    const merged = await b.api.enqueue(updateNote(`pending:${create.id}`, { title: 'from B' }));
    expect(merged.outcome).toBe('coalesced');
    gate.open = true;
    gate.waiting.shift()!();
    expect((await late).outcome).toBe('coalesced');
    world.clock.advance(LEASE + 1);
    await b.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.map((e) => e.method)).toEqual(['POST']);
    const [record] = [...world.server.records.values()].filter((r) => r.owner === OWNER);
    expect(record?.data).toEqual({ title: 'from B', body: 'from A' });
  });

  it('G4: a merge folds the rows it absorbs in the order they were made, even when a successor sorts before its predecessor', async () => {
    const record = world.server.seed(OWNER, { title: 'seed' });
    const a = await world.holder('A');
    // Saved in the same millisecond, the successor's id sorts before its predecessor's.
    const u1 = await a.api.enqueue({
      ...updateNote(record.id, { title: 'first', body: 'first' }),
      id: 'zz-update-1',
    });
    const inFlight = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue({
      ...updateNote(record.id, { title: 'second' }),
      id: 'aa-update-2',
    });
    expect(u2.outcome).toBe('successor');
    world.server.inject('fail503');
    a.transport.open();
    await inFlight;
    // U1 applied nothing (503): the next edit folds U1, U2 and itself into one row, in that order.
    const u3 = await a.api.enqueue({
      ...updateNote(record.id, { tag: 'third' }),
      id: 'mm-update-3',
    });
    expect(u3.outcome).toBe('coalesced');
    expect((await world.row(u3.id))?.payload).toEqual({
      title: 'second',
      body: 'first',
      tag: 'third',
    });
    world.clock.advance(LEASE + 1);
    await a.api.flush({ force: true });
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'second',
      body: 'first',
      tag: 'third',
    });
  });

  it('G4: an edit made while the original was in flight stays after its conflict successor when a later edit merges them', async () => {
    const { record, a, u1 } = await firstEdit(
      { title: 'first', body: 'first' },
      { baseRevision: 1 },
    );
    const inFlight = (await world.holdInFlight(a, u1.id)).done;
    world.server.editElsewhere(record.id, { other: 'theirs' });
    // Made while U1 is in flight, saved in the same millisecond, with an id that sorts early.
    const u2 = await a.api.enqueue({
      ...updateNote(record.id, { title: 'second' }, 1),
      id: 'aa-update-2',
    });
    expect(u2.outcome).toBe('successor');
    // U1 meets the other device's edit: its conflict successor is written, and fails with 503.
    a.transport.beforeSend = async (request) => {
      if (request.requestId !== u1.requestId) world.server.inject('fail503');
    };
    a.transport.open();
    await inFlight;
    a.transport.beforeSend = undefined;
    const resend = (await world.rows()).find((row) => row.conflict !== undefined);
    expect(resend?.evidence?.lastErrorCode).toBe('http_503');
    // U3 folds the resend, U2 and itself, in the order they were made.
    const u3 = await a.api.enqueue(updateNote(record.id, { tag: 'third' }));
    expect(u3.outcome).toBe('coalesced');
    const [merged, ...rest] = await world.rows();
    expect(rest).toEqual([]);
    expect(merged?.payload).toEqual({ title: 'second', body: 'first', tag: 'third' });
    expect(merged?.conflict).toBeDefined();
    world.clock.advance(LEASE + 1);
    await a.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'second',
      body: 'first',
      tag: 'third',
      other: 'theirs',
    });
    expect(await a.api.conflicts()).toHaveLength(1);
  });

  it('G2: a row a legacy tab sent and put back is never merged: its request may have been applied', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first' });
    a.transport.answerWith = tooManyRequests();
    a.transport.beforeSend = async () => {
      // The 429 is the answer to a request the server never saw.
      world.server.inject('network');
    };
    await a.api.flush();
    a.transport.beforeSend = undefined;
    expect((await world.row(u1.id))?.evidence?.lastErrorCode).toBe('http_429');
    // A tab of the old bundle sends the row as it is: the server applies it, the answer is lost,
    // and the tab puts the row back, queued with its sentAt (it knows nothing of evidence).
    expect(await legacySendLost(a.store, u1.id)).toEqual(['committed', 'committed']);
    expect(world.server.effectsFor(u1.requestId!)).toBe(1);
    await expectNextEditAfter(a, record.id, u1);
  });

  it('G4: a rejected edit that a newer edit overtook is not merged into the next one, so its fields never land over the newer edit', async () => {
    // U1 is rejected; its successor U2 goes on and is applied.
    const { record, a, u1, u2 } = await rejectedBeforeItsSuccessor({
      title: 'first',
      body: 'first',
    });
    expect((await world.row(u1.id))?.state).toBe('blocked');
    expect(world.server.effects.map((e) => e.key)).toEqual([u2.requestId]);
    await expectThirdOverSecond(a, record.id);
    expect((await world.row(u1.id))?.blockedCode).toBe('http_422');
  });

  it('G4: a rejected edit is marked overtaken when the edit after it is claimed, so a legacy tab that resends and deletes that edit leaves nothing to merge it into the next one', async () => {
    // U1 is rejected; U2 goes on and is applied, its answer lost: no ACK marks U1.
    const { record, a, u1, u2 } = await rejectedBeforeItsSuccessor(
      { title: 'first', body: 'first' },
      ['drop'],
    );
    await a.api.flush();
    expect((await world.row(u1.id))?.state).toBe('blocked');
    expect(world.server.effects.map((e) => e.key)).toEqual([u2.requestId]);
    // A tab of the old bundle resends U2 (answered from the ledger) and deletes it, no receipt.
    expect(await legacyRewrite(a.store, await a.store.get(u2.id))).toBe('committed');
    await expectThirdOverSecond(a, record.id);
    expect(await world.row(u1.id)).toMatchObject({
      blockedCode: 'http_422',
      overtakenBy: expect.any(String),
    });
  });

  it('G2: a row a legacy tab sent stays unknown after this bundle tried it again and sent nothing', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first' });
    const b = await world.holder('B', { transport: noCredentials });
    // A tab of the old bundle sends U1: the server applies it, the answer is lost, the tab puts
    // the row back, queued with its sentAt.
    await legacySendLost(a.store, u1.id);
    // B, with no credentials, claims it and sends nothing: held, its sentAt gone.
    const u2 = await heldThenEdited(a, b, record.id, u1);
    await a.api.flush({ force: true });
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2.requestId]);
  });

  it('G4: an edit of a create that vanished is planned again once another holder found its receipt, so it goes after the edit converted first', async () => {
    const gate: Gate = { waiting: [], open: true };
    const a = await world.holder('A');
    const b = await world.holder('B', { wrapStore: gatedRecordReads(gate) });
    const create = await a.api.enqueue(createNote({ title: 'draft' }));
    // A tab of the old bundle sends the create and deletes its row: no receipt is kept here.
    const raw = (await a.store.get(create.id)) as {
      request: Parameters<typeof world.server.handle>[0];
    };
    world.server.handle(raw.request, OWNER);
    await legacyRewrite(a.store, raw);
    const first = await a.api.enqueue(updateNote(`pending:${create.id}`, { title: 'first' }));
    expect(first.outcome).toBe('intent');
    // B's edit is planned while A does what follows: B's read of the record waits until then.
    gate.open = false;
    const second = b.api.enqueue(updateNote(`pending:${create.id}`, { body: 'second' }));
    await world.until(() => gate.waiting.length === 1, 'B planning');
    // Meanwhile A finds the receipt on the server, converts the first edit and sends it.
    a.transport.close();
    const sending = a.api.flush();
    await world.until(
      () => world.log.some((line) => line.startsWith(`convert:${first.id}->`)),
      'the first edit converted',
    );
    const converted = world.log
      .find((line) => line.startsWith(`convert:${first.id}->`))!
      .split('->')[1]!;
    await world.until(
      () => world.log.includes(`claim:A:${converted}:1`),
      'the converted edit in flight',
    );
    gate.open = true;
    gate.waiting.shift()!();
    // The receipt is known now: the second edit is an edit of the server id, after the first.
    const made = await second;
    expect(made.outcome).toBe('successor');
    await b.api.flush();
    a.transport.open();
    await sending;
    world.clock.advance(LEASE + 1);
    await b.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.map((e) => e.key)).toEqual([
      create.requestId,
      converted,
      made.requestId,
    ]);
  });

  it('G4: a row selected past a blocked row of its record is not claimed once that row was retried, so the two never travel together', async () => {
    const gate: Gate = { waiting: [], open: true };
    const { record, a, u1 } = await firstEdit(
      { title: 'first' },
      { handlers: unreadableAnswers(1) },
    );
    // B's claims wait at a gate: B selects, then the app retries, then B claims.
    const b = await world.holder('B', { wrapStore: gatedClaims(gate) });
    await a.api.flush();
    expect((await world.row(u1.id))?.blockedCode).toBe('handler_failed');
    // U1 may have been applied: U2 is its successor, free to go past it while it is blocked.
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }));
    expect(u2.outcome).toBe('successor');
    gate.open = false;
    const flushed = b.api.flush();
    await world.until(() => gate.waiting.length === 1, 'B selected U2');
    // The app fixed its handler and retries U1: its new decision, ordered as made now (§6.1).
    await a.api.retry(u1.id);
    gate.open = true;
    gate.waiting.shift()!();
    const report = await flushed;
    // B's claim of U2 rested on the record as B saw it, U1 blocked: stale.
    expect(report.stale).toBeGreaterThan(0);
    await a.api.flush();
    await a.api.flush();
    expect(await world.rows()).toEqual([]);
    // One at a time: U2, made before the retry, went first; U1 left once U2 was settled.
    const log = world.log.map((line, at) => ({ line, at }));
    const settled = (id: string) =>
      log.filter(({ line }) => /^settle:\w+:/.test(line) && line.includes(`:${id}:success`));
    const sent = (key: string) =>
      log.filter(({ line }) => line.startsWith('send:') && line.endsWith(`:${key}`));
    expect(settled(u2.id).length).toBeGreaterThan(0);
    expect(sent(u1.requestId!).at(-1)!.at).toBeGreaterThan(settled(u2.id)[0]!.at);
    expect(world.server.effectsFor(u1.requestId!)).toBe(1);
  });

  it('G4: a blocked row retried while a later edit of its record is in flight goes after that edit, never beside it', async () => {
    const { record, a, u1 } = await firstEdit(
      { title: 'first' },
      { handlers: unreadableAnswers(1) },
    );
    const b = await world.holder('B');
    await a.api.flush();
    expect((await world.row(u1.id))?.blockedCode).toBe('handler_failed');
    // The next edit goes past the blocked U1, and is on the wire when the app retries U1.
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }));
    const inFlight = (await world.holdInFlight(a, u2.id)).done;
    await b.api.retry(u1.id);
    await b.api.flush();
    expect(world.log.filter((line) => line === `send:B:${u1.requestId}`)).toEqual([]);
    // U2 comes back unapplied (503): it goes again before the retried U1, not waiting on it.
    world.server.inject('fail503');
    a.transport.open();
    await inFlight;
    world.clock.advance(LEASE + 1);
    await b.api.flush({ force: true });
    expect(sentKeys()).toEqual([u1.requestId, u2.requestId, u2.requestId, u1.requestId]);
    expect(await world.rows()).toEqual([]);
  });

  it('G7: rows retried one after another around an edit in flight never end up waiting on each other in a ring', async () => {
    // U1 and U2 are applied but their answers cannot be read: both blocked, U2 after U1.
    const { record, a, u1 } = await firstEdit(
      { title: 'first' },
      { handlers: unreadableAnswers(2) },
    );
    const b = await world.holder('B');
    await a.api.flush();
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }));
    await a.api.flush();
    expect((await world.row(u2.id))?.successorOf).toBe(u1.id);
    expect((await world.row(u2.id))?.blockedCode).toBe('handler_failed');
    // U3 goes past them and is on the wire when the app retries U1; then it comes back (503).
    const u3 = await a.api.enqueue(updateNote(record.id, { tag: 'third' }));
    const inFlight = (await world.holdInFlight(a, u3.id)).done;
    await b.api.retry(u1.id);
    world.server.inject('fail503');
    a.transport.open();
    await inFlight;
    await b.api.retry(u2.id);
    world.clock.advance(LEASE + 1);
    await b.api.flush({ force: true });
    expect(await world.rows()).toEqual([]);
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'first',
      body: 'second',
      tag: 'third',
    });
  });

  it("G2: a row a legacy tab sent while this holder had it claimed stays the tab's: the holder's failed attempt does not mark it as applying nothing", async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first' });
    const store = a.store;
    let sending: Record<string, unknown> | undefined;
    a.transport.beforeSend = async () => {
      // While A's request waits, a tab of the old bundle sends the row as it is (it ignores
      // claims); the server applies that copy.
      const raw = (await store.get(u1.id)) as Record<string, unknown>;
      sending = { ...raw, state: 'sending', sentAt: world.clock.now() + 1 };
      await legacyRewrite(store, raw, sending);
      world.server.handle((await world.row(u1.id))!.request!, OWNER);
    };
    // A's own request is answered 429: A's attempt applied nothing, the tab's did.
    a.transport.answerWith = tooManyRequests();
    await a.api.flush();
    a.transport.beforeSend = undefined;
    expect(world.server.effectsFor(u1.requestId!)).toBe(1);
    expect(await store.get(u1.id)).toEqual(sending);
    // The tab's answer is lost; it puts the row back, queued with its sentAt.
    expect(await legacyRewrite(store, sending, { ...sending, state: 'queued' })).toBe('committed');
    await expectNextEditAfter(a, record.id, u1);
  });

  it('G4: a rejected edit is not merged into the next one while an edit that went past it is in flight, before that edit has a receipt', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first', body: 'first' });
    world.server.inject('reject');
    await a.api.flush();
    expect((await world.row(u1.id))?.blockedCode).toBe('http_422');
    // A tab of the old bundle, its clock behind, queues its own edit of the note; this bundle
    // sends it (a blocked row does not hold its record) and it is on the wire.
    const legacy = await writeLegacyEdit(
      world,
      record.id,
      { title: 'legacy' },
      world.clock.now() - 1_000,
    );
    const inFlight = (await world.holdInFlight(a, legacy)).done;
    // U3 is made now: it must not carry U1's rejected fields over the legacy edit.
    const u3 = await a.api.enqueue(updateNote(record.id, { tag: 'third' }));
    expect(u3.outcome).toBe('successor');
    a.transport.open();
    await inFlight;
    await a.api.flush();
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'legacy',
      tag: 'third',
    });
    expect((await world.row(u1.id))?.blockedCode).toBe('http_422');
  });

  it('G4: a rejected edit a legacy edit overtook is not merged into the next one even when the clock stepped back between the two', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first', body: 'first' });
    world.server.inject('reject');
    await a.api.flush();
    expect((await world.row(u1.id))?.blockedCode).toBe('http_422');
    // The device's clock steps back: the legacy edit below is applied at an earlier reading
    // than U1 was blocked at, though it came after.
    world.clock.advance(-1_000);
    const legacy = await writeLegacyEdit(world, record.id, { title: 'legacy' });
    await a.api.flush();
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'legacy' });
    expect(await world.row(u1.id)).toMatchObject({ state: 'blocked', overtakenBy: legacy });
    // U3 is made now: it must not carry U1's rejected fields over the legacy edit.
    const u3 = await a.api.enqueue(updateNote(record.id, { tag: 'third' }));
    expect(u3.outcome).not.toBe('coalesced');
    await a.api.flush();
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'legacy',
      tag: 'third',
    });
    // Retried, U1 meets the edit applied last (U3's) through the conflict rule, not blindly: with
    // no revision for the server to check, it stays blocked for the app (§6.1, §10).
    expect(await world.row(u1.id)).toMatchObject({ overtakenBy: u3.requestId });
    await a.api.retry(u1.id);
    await a.api.flush();
    expect(world.server.seen.filter((s) => s.key === u1.requestId)).toHaveLength(1);
    expect(await world.row(u1.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'revision_conflict',
    });
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'legacy', tag: 'third' });
  });

  it('G4: a rejected edit retried after the receipt of the edit that overtook it was pruned stays blocked as a revision conflict, not resent over that edit', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first' });
    world.server.inject('reject');
    await a.api.flush();
    const legacy = await writeLegacyEdit(world, record.id, { title: 'legacy' });
    await a.api.flush();
    expect(await world.row(u1.id)).toMatchObject({ state: 'blocked', overtakenBy: legacy });
    // Receipts are bounded: the one the mark names is gone; the mark still says an edit went past.
    await a.store.prune(OWNER, {
      maxReceipts: 0,
      olderThan: world.clock.now() + 1,
      maxLedger: 100,
    });
    expect(await a.store.getReceipt(legacy, OWNER)).toBeUndefined();
    await a.api.retry(u1.id);
    await a.api.flush();
    expect(world.server.seen.filter((s) => s.key === u1.requestId)).toHaveLength(1);
    expect(await world.row(u1.id)).toMatchObject({
      state: 'blocked',
      blockedCode: 'revision_conflict',
    });
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'legacy' });
  });

  it('G4: a rejected edit whose record had only older edits applied is merged into the next one, even when the clock stepped back between the two', async () => {
    const { record, a, u1 } = await firstEdit({ body: 'one' });
    await a.api.flush();
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId]);
    // The clock steps back: U2 is blocked at an earlier reading than U1 was applied at.
    world.clock.advance(-1_000);
    const u2 = await a.api.enqueue(updateNote(record.id, { title: 'two' }));
    world.server.inject('reject');
    await a.api.flush();
    expect(await world.row(u2.id)).toMatchObject({ state: 'blocked', blockedCode: 'http_422' });
    expect((await world.row(u2.id))?.overtakenBy).toBeUndefined();
    // Nothing newer than U2 was applied: the next edit takes U2's fields along (§6).
    const u3 = await a.api.enqueue(updateNote(record.id, { tag: 'three' }));
    expect(u3.outcome).toBe('coalesced');
    await a.api.flush();
    expect(await world.rows()).toEqual([]);
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'two',
      body: 'one',
      tag: 'three',
    });
  });

  it('G3: two restores of one conflict at once never bring its row back after a legacy tab sent and deleted it', async () => {
    const gate: Gate = { waiting: [], open: true };
    const a = await world.holder('A', { wrapStore: gatedEnqueues(gate) });
    const record = world.server.seed(OWNER, { title: 'Trip', body: 'base' });
    world.server.editElsewhere(record.id, { body: 'theirs' });
    await a.api.enqueue(updateNote(record.id, { body: 'mine' }, 1));
    await a.api.flush();
    const [entry] = await a.api.conflicts();
    // Both restores read the ledger before either commits.
    gate.open = false;
    const first = a.api.restore(entry!.successorId);
    const second = a.api.restore(entry!.successorId);
    await world.until(() => gate.waiting.length === 2, 'both restores planned');
    gate.waiting.shift()!();
    const restored = await first;
    expect(restored.outcome).toBe('queued');
    // A tab of the old bundle sends the restore and deletes its row: no receipt, no tombstone.
    const raw = await a.store.get(restored.id);
    world.server.handle((await world.row(restored.id))!.request!, OWNER);
    await legacyRewrite(a.store, raw);
    gate.open = true;
    gate.waiting.shift()!();
    expect(await second).toMatchObject({ id: restored.id, outcome: 'existing' });
    expect(await world.rows()).toEqual([]);
    // Asked once more, the ledger answers with the row and its record.
    expect(await a.api.restore(entry!.successorId)).toEqual({
      id: restored.id,
      targetId: record.id,
      outcome: 'existing',
    });
    await a.api.flush({ force: true });
    expect(world.server.effectsFor(restored.id)).toBe(1);
  });

  it('G4: a classifier that throws on a request that got no answer leaves the row holding its successors, so a late commit of it never lands over them', async () => {
    const record = world.server.seed(OWNER, { title: 'seed' });
    const handlers = world.handlers({
      classify: (result, fallback) => {
        if (result.kind === 'timeout') throw new Error('the app cannot read this');
        return fallback;
      },
    });
    let late: RowRequest | undefined;
    let u2: { id: string; requestId?: string; outcome: string } | undefined;
    const transport: Transport = {
      send: async (request, ctx) => {
        if (late !== undefined || request.requestId === u2?.requestId)
          return world.server.handle(request, ctx.owner);
        // U1 reaches a server that takes its time to commit; the holder gives up at its lease.
        late = request;
        u2 = await a.api.enqueue(updateNote(record.id, { title: 'second' }));
        return { kind: 'timeout' };
      },
      lookupReceipt: async (requestId, ctx) => world.server.lookup(ctx.owner, requestId),
    };
    const a = await world.holder('A', { handlers, transport });
    const u1 = await a.api.enqueue(updateNote(record.id, { title: 'first' }));
    await a.api.flush();
    expect(u2?.outcome).toBe('successor');
    expect(await world.row(u1.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'timeout' },
    });
    world.clock.advance(LEASE + 1);
    await a.api.flush({ force: true });
    // The server commits the first copy of U1 only now.
    world.server.handle(late!, OWNER);
    expect(world.server.effects.map((e) => e.key)).toEqual([u1.requestId, u2!.requestId]);
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'second' });
    expect(await world.rows()).toEqual([]);
  });

  it('G4: a retried edit queued behind an edit in flight is not merged into the next edit, so it still meets the revision check', async () => {
    const { record, a, u1 } = await firstEdit({ title: 'first' }, { baseRevision: 1 });
    const inFlight = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }, 1));
    expect(u2.outcome).toBe('successor');
    let u3: { outcome: string } | undefined;
    a.transport.beforeSend = async (request) => {
      if (request.requestId !== u2.requestId || u3 !== undefined) return;
      // U2 went past the rejected U1 and is on the wire when the app retries U1 and edits again.
      await a.api.retry(u1.id);
      u3 = await a.api.enqueue(updateNote(record.id, { tag: 'third' }, 1));
    };
    world.server.inject('reject');
    a.transport.open();
    await inFlight;
    a.transport.beforeSend = undefined;
    expect(u3?.outcome).toBe('successor');
    for (let i = 0; i < 4 && (await world.rows()).length > 0; i++) {
      world.clock.advance(LEASE + 1);
      await a.api.flush({ force: true });
    }
    expect(await world.rows()).toEqual([]);
    // U1's fields land over U2 only through the conflict rule, with its ledger entry.
    expect((await a.api.conflicts()).map((c) => c.originalId)).toContain(u1.id);
    expect(world.server.records.get(record.id)?.data).toEqual({
      title: 'first',
      body: 'second',
      tag: 'third',
    });
  });

  it('G4: a retry planned before a later edit of its record was claimed is planned again, so the retried row queues after that edit', async () => {
    const gate: Gate = { waiting: [], open: true };
    // U1 has a revision check: U2, on the wire at the retry, may already have been applied, so
    // the retried U1 meets it through the conflict rule (§6.1, §10).
    const { record, a, u1 } = await firstEdit({ title: 'first' }, { baseRevision: 1 });
    const b = await world.holder('B', { wrapStore: gatedRetries(gate) });
    const first = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { body: 'second' }));
    expect(u2.outcome).toBe('successor');
    // U1 is rejected; U2, released by the block, comes back unapplied (503).
    world.server.inject('reject', 'fail503');
    a.transport.open();
    await first;
    expect((await world.row(u1.id))?.state).toBe('blocked');
    expect((await world.row(u2.id))?.state).toBe('queued');
    // B plans the retry of U1 while U2 waits; before it commits, A claims U2 and sends it.
    gate.open = false;
    const retried = b.api.retry(u1.id);
    await world.until(() => gate.waiting.length === 1, 'the retry planned');
    world.clock.advance(2_000);
    const second = (await world.holdInFlight(a, u2.id, 2)).done;
    gate.open = true;
    gate.waiting.shift()!();
    await retried;
    await b.api.flush();
    expect(world.log.filter((line) => line === `send:B:${u1.requestId}`)).toEqual([]);
    a.transport.open();
    await second;
    await b.api.flush();
    await b.api.flush();
    // U1 after U2, then its resend past the 412, with the overwrite's ledger entry.
    expect(sentKeys().slice(0, 4)).toEqual([
      u1.requestId,
      u2.requestId,
      u2.requestId,
      u1.requestId,
    ]);
    expect(sentKeys()).toHaveLength(5);
    expect((await b.api.conflicts()).map((c) => c.originalId)).toContain(u1.requestId);
    expect(await world.rows()).toEqual([]);
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'first', body: 'second' });
  });

  it('G7: a conflict successor retried while the edit made after its original is in flight never waits on that edit in a ring', async () => {
    const { record, a, u1 } = await firstEdit(
      { title: 'first' },
      { handlers: unreadableAnswers(1), baseRevision: 1 },
    );
    world.server.editElsewhere(record.id, { body: 'theirs' });
    const b = await world.holder('B');
    const first = (await world.holdInFlight(a, u1.id)).done;
    const u2 = await a.api.enqueue(updateNote(record.id, { tag: 'second' }, 1));
    expect(u2.outcome).toBe('successor');
    // U1 meets a conflict; its resend R is applied but the answer cannot be read, so R is
    // blocked and U2 goes past it. While U2 is on the wire the app retries R; U2 comes back (503).
    let resend: string | undefined;
    a.transport.beforeSend = async (request) => {
      if (request.requestId !== u2.requestId || resend !== undefined) return;
      resend = (await world.rows()).find((row) => row.conflict !== undefined)?.id;
      expect((await world.row(resend!))?.blockedCode).toBe('handler_failed');
      await b.api.retry(resend!);
      world.server.inject('fail503');
    };
    a.transport.open();
    await first;
    a.transport.beforeSend = undefined;
    expect(resend).toBeDefined();
    for (let i = 0; i < 4 && (await world.rows()).length > 0; i++) {
      world.clock.advance(LEASE + 1);
      await b.api.flush({ force: true });
    }
    expect(await world.rows()).toEqual([]);
    expect(world.server.effectsFor(resend!)).toBe(1);
  });
});
