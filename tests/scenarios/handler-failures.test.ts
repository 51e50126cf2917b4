import { afterEach, describe, expect, it } from 'vitest';
import { createOutboxCore } from '../../shared/core/outbox-core.ts';
import type { CollectionHandler, IntentInfo } from '../../shared/model/handler.ts';
import type { Json } from '../../shared/model/json.ts';
import type { Outcome } from '../../shared/model/outcome.ts';
import type { Transport, TransportResult } from '../../shared/model/ports.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { countingIds } from '../support/clock.ts';
import { type Holder, LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';
import { modelFetchTransport } from '../support/model-fetch.ts';
import { GatedTransport } from '../support/model-server.ts';

/**
 * App code that throws (G7: a typed error, nothing lost, the loop keeps going). A collection
 * handler that throws while reading an answer blocks the row with `handler_failed` and the
 * reason, never leaving it claimed; other rows go on; once the handler is fixed, `retry` resends
 * the same key and the server replays its stored answer — one effect. A telemetry listener that
 * throws changes nothing.
 */
describe.each(STORE_KINDS)('app code that throws, on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  const rest = restHandler({ baseUrl: '/api/notes' });
  const isBad = (body: Json) => (body as { title?: string } | null)?.title === 'bad';
  const create = (title: string) => createNote({ title });

  /** Another device edits the record, then `holder` enqueues an edit of revision 1: it conflicts. */
  async function editMeetingAConflict(holder: Holder, recordId: string) {
    world.server.editElsewhere(recordId, { title: 'theirs' });
    return holder.api.enqueue(updateNote(recordId, { title: 'mine' }, 1));
  }

  async function blockedThenRetried(
    broken: { on: boolean },
    overrides: Partial<CollectionHandler>,
    detail = 'cannot read this',
  ) {
    world = await World.create(kind);
    const a = await world.holder('A', { handlers: world.handlers(overrides) });
    const bad = await a.api.enqueue(create('bad'));
    const good = await a.api.enqueue(create('good'));

    const report = await a.api.flush();
    expect(report).toMatchObject({ claimed: 2, succeeded: 1, blocked: 1 });
    const view = await a.api.row(bad.id);
    expect(view?.status).toBe('blocked');
    expect(view?.row).toMatchObject({
      blockedCode: 'handler_failed',
      blockedDetail: expect.stringContaining(detail),
    });
    expect(await a.api.row(good.id)).toBeUndefined();

    broken.on = false;
    await a.api.retry(bad.id);
    expect(await a.api.flush()).toMatchObject({ succeeded: 1, blocked: 0 });
    expect(await a.api.row(bad.id)).toBeUndefined();
    // Two requests with the bad row's key, one effect: the retry was answered from the ledger.
    expect(world.server.seen.filter((s) => s.key === bad.requestId)).toHaveLength(2);
    expect(world.server.effects.map((e) => e.key).sort()).toEqual(
      [bad.requestId, good.requestId].sort(),
    );
    expect((await a.api.receipt(bad.requestId!))?.status).toBe(201);
  }

  it('readReceipt throws: blocked with the reason, then retried once fixed', async () => {
    const broken = { on: true };
    await blockedThenRetried(broken, {
      readReceipt(body, status) {
        if (broken.on && isBad(body)) throw new Error('cannot read this receipt');
        return rest.readReceipt!(body, status);
      },
    });
  });

  it('readReceipt names a server id that reads as a pending target: blocked with the reason, then retried once fixed (§6.1, G7)', async () => {
    const broken = { on: true };
    await blockedThenRetried(
      broken,
      {
        readReceipt(body, status) {
          const facts = rest.readReceipt!(body, status);
          return broken.on && isBad(body) ? { ...facts, serverId: 'pending:x' } : facts;
        },
      },
      'reads as a pending target',
    );
  });

  it('classify returns no outcome for a final answer: blocked handler_failed, then retried once fixed (G7)', async () => {
    const broken = { on: true };
    await blockedThenRetried(
      broken,
      {
        classify(result, fallback) {
          const body = result.kind === 'response' ? (JSON.parse(result.body) as Json) : null;
          return broken.on && isBad(body) ? (undefined as unknown as Outcome) : fallback;
        },
      },
      'classify returned no outcome',
    );
  });

  it('classify returns no outcome for one item of a batch: that row is blocked handler_failed, the others settle, the flush goes on (G1, G7)', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const { transport } = modelFetchTransport(world.server, world.clock);
    const batched = restHandler({ baseUrl: '/api/notes', batch: { url: '/sync/batch' } });
    const broken = { on: true };
    const a = await world.holder('A', {
      transport,
      handlers: {
        notes: {
          ...batched,
          classify(result, fallback) {
            const body = result.kind === 'response' ? result.body : '';
            return broken.on && body.includes('"bad"')
              ? (undefined as unknown as Outcome)
              : fallback;
          },
        },
      },
    });
    const good = await a.api.enqueue(create('good'));
    const bad = await a.api.enqueue(create('bad'));
    const other = await a.api.enqueue(create('other'));
    const report = await a.api.flush();
    expect(world.server.batches).toHaveLength(1);
    expect(report).toMatchObject({ succeeded: 2, blocked: 1 });
    expect(report.stopped).toBeUndefined();
    expect((await world.rows()).map((r) => [r.id, r.state, r.blockedCode])).toEqual([
      [bad.id, 'blocked', 'handler_failed'],
    ]);

    broken.on = false;
    await a.api.retry(bad.id);
    expect(await a.api.flush()).toMatchObject({ succeeded: 1, blocked: 0 });
    expect(await world.rows()).toEqual([]);
    expect(world.server.effects.map((e) => e.key).sort()).toEqual(
      [good.requestId, bad.requestId, other.requestId].sort(),
    );
  });

  it('classify throws: blocked with the reason, then retried once fixed', async () => {
    const broken = { on: true };
    await blockedThenRetried(broken, {
      classify(result, fallback) {
        const body = result.kind === 'response' ? (JSON.parse(result.body) as Json) : null;
        if (broken.on && isBad(body)) throw new Error('cannot read this answer');
        return fallback;
      },
    });
  });

  it.each([
    {
      what: 'throws',
      bad: () => {
        throw new Error('unexpected 409');
      },
    },
    { what: 'returns nothing', bad: () => undefined },
    { what: 'returns what is no outcome', bad: () => ({ kind: 'nonsense' }) },
  ])(
    'classify $what on an answer that is not final (409 request in progress): the row keeps its key and place, and the edit made after it waits for it (G4)',
    async ({ bad }) => {
      world = await World.create(kind);
      const record = world.server.seed(OWNER, { title: 'a' });
      // The first copy of the first edit is still being committed when the answer comes.
      const gate = new GatedTransport(world.server, world.log, 'A');
      let inProgress = 1;
      const transport: Transport = {
        lookupReceipt: (id, ctx) => gate.lookupReceipt(id, ctx),
        async send(request, ctx) {
          if (inProgress-- <= 0) return gate.send(request, ctx);
          return {
            kind: 'response',
            status: 409,
            headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
            body: JSON.stringify({ type: PROBLEM.inProgress, title: 'In progress', status: 409 }),
          };
        },
      };
      const a = await world.holder('A', {
        transport,
        handlers: world.handlers({
          classify(result, fallback) {
            if (result.kind === 'response' && result.status === 409) return bad() as Outcome;
            return fallback;
          },
        }),
      });
      const first = await a.api.enqueue(updateNote(record.id, { title: 'first' }, 1));
      await a.api.flush();
      const view = await a.api.row(first.id);
      expect(view?.row).toMatchObject({
        state: 'queued',
        request: { requestId: first.requestId },
        evidence: { lastErrorCode: 'request_in_progress' },
      });
      expect(view?.row.blockedCode).toBeUndefined();

      // The next edit of the record goes after the first, never ahead of its commit.
      const second = await a.api.enqueue(updateNote(record.id, { title: 'second' }));
      expect((await a.api.row(second.id))?.row.successorOf ?? first.id).toBe(first.id);
      world.clock.advance(60_000);
      await a.api.flush({ force: true });
      await a.api.flush({ force: true });
      expect(world.server.effects.map((e) => e.key)).toEqual([first.requestId, second.requestId]);
      expect(world.server.records.get(record.id)?.data).toEqual({ title: 'second' });
    },
  );

  it('classify throws on a 401 to a retry whose first attempt may still land: the row stays held, keeping its key, and the edit made after it waits for it (G4)', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    // The first attempt's answer never comes (it may still reach the server); the retry's
    // credentials are refused; every later request goes through.
    const gate = new GatedTransport(world.server, world.log, 'A');
    const answers: TransportResult[] = [
      { kind: 'timeout' },
      { kind: 'response', status: 401, headers: {}, body: '' },
    ];
    const transport: Transport = {
      lookupReceipt: (id, ctx) => gate.lookupReceipt(id, ctx),
      send: async (request, ctx) => answers.shift() ?? gate.send(request, ctx),
    };
    const a = await world.holder('A', {
      transport,
      handlers: world.handlers({
        classify(result, fallback) {
          if (result.kind === 'response' && result.status === 401) throw new Error('no session');
          return fallback;
        },
      }),
    });
    const first = await a.api.enqueue(updateNote(record.id, { title: 'first' }, 1));
    await a.api.flush();
    world.clock.advance(60_000);
    await a.api.flush({ force: true });
    const view = await a.api.row(first.id);
    expect(view?.row).toMatchObject({ state: 'held', request: { requestId: first.requestId } });
    expect(view?.row.blockedCode).toBeUndefined();

    // The next edit of the record waits behind the held one, and goes after it once resumed.
    const second = await a.api.enqueue(updateNote(record.id, { title: 'second' }));
    await a.api.flush({ force: true });
    expect(world.server.effects.map((e) => e.key)).toEqual([]);
    await a.api.resumeHeld();
    await a.api.flush({ force: true });
    await a.api.flush({ force: true });
    expect(world.server.effects.map((e) => e.key)).toEqual([first.requestId, second.requestId]);
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'second' });
  });

  it('a conflict policy that throws: the row is blocked with the reason, nothing else is sent', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A', {
      handlers: world.handlers({
        conflict: () => {
          throw new Error('cannot merge this');
        },
      }),
    });
    const edit = await editMeetingAConflict(a, record.id);
    expect(await a.api.flush()).toMatchObject({ conflicts: 1, blocked: 1 });
    expect((await a.api.row(edit.id))?.row).toMatchObject({
      blockedCode: 'handler_failed',
      blockedDetail: expect.stringContaining('cannot merge this'),
    });
    expect(world.server.seen.map((s) => s.key)).toEqual([edit.requestId]);
    expect(world.server.records.get(record.id)?.data).toEqual({ title: 'theirs' });
  });

  it('an onEvent listener that throws changes nothing: rows are claimed, sent and settled', async () => {
    world = await World.create(kind);
    const { store, transport } = await world.holder('A');
    const core = createOutboxCore({
      store,
      transport,
      clock: world.clock,
      ids: countingIds('X'),
      handlers: world.handlers(),
      holderId: 'X',
      bundle: 'test',
      leaseMs: LEASE,
      onEvent: () => {
        throw new Error('a listener bug');
      },
    });
    const api = core.forOwner(OWNER);
    const made = await api.enqueue(create('one'));
    expect(await api.flush()).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await api.row(made.id)).toBeUndefined();
    expect(world.server.effects.map((e) => e.key)).toEqual([made.requestId]);
  });

  it('a coalesce that throws fails the enqueue with handler_failed and changes nothing', async () => {
    world = await World.create(kind);
    const a = await world.holder('A', {
      handlers: world.handlers({
        coalesce: () => {
          throw new Error('cannot merge these');
        },
      }),
    });
    const made = await a.api.enqueue(create('first'));
    const before = await world.rows();
    await expect(
      a.api.enqueue(updateNote(made.targetId, { title: 'second' })),
    ).rejects.toMatchObject({ code: 'handler_failed', message: 'cannot merge these' });
    expect(await world.rows()).toEqual(before);
  });

  it('a coalesce that cancels a pair of queued rows leaves a later edit of the record to go after them (G1)', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A', {
      handlers: world.handlers({
        // A like followed by an unlike is nothing at all.
        coalesce: (earlier, later) =>
          earlier.kind === 'like' && later.kind === 'unlike' ? 'cancel' : undefined,
      }),
    });
    const edit = (kind: string, payload: Json) =>
      a.api.enqueue({ collection: 'notes', kind, targetId: record.id, payload });
    const like = await edit('like', { liked: true });
    // The like is on the wire when the unlike is made, then answered 503: nothing applied.
    world.server.inject('fail503');
    const flight = await world.holdInFlight(a, like.id);
    expect((await edit('unlike', { liked: false })).outcome).toBe('successor');
    a.transport.open();
    await flight.done;

    const rename = await edit('update', { title: 'renamed' });
    expect(rename.outcome).toBe('successor');
    world.clock.advance(600_000);
    await a.api.flush({ force: true });
    await a.api.flush({ force: true });
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'renamed' });
    expect(world.server.effects.at(-1)?.key).toBe(rename.requestId);
  });

  it.each([
    {
      what: 'turns a create not sent yet into an update',
      coalesce: (earlier: IntentInfo, later: IntentInfo) => ({
        kind: later.kind,
        payload: { ...(earlier.payload as object), ...(later.payload as object) },
      }),
    },
    {
      what: 'returns a payload that is no JSON',
      coalesce: (earlier: IntentInfo) => ({
        kind: earlier.kind,
        payload: { title: 'merged', body: undefined } as unknown as Json,
      }),
    },
    {
      what: 'returns a kind the collection does not take',
      coalesce: () => ({ kind: 'archive', payload: {} }),
    },
  ])(
    'a coalesce that $what fails the enqueue with handler_failed; the create goes as it was (§8, G7)',
    async ({ coalesce }) => {
      world = await World.create(kind);
      const a = await world.holder('A', {
        handlers: world.handlers({ kinds: ['create', 'update', 'delete'], coalesce }),
      });
      const created = await a.api.enqueue(create('draft'));
      const before = await a.store.get(created.id);
      await expect(
        a.api.enqueue(updateNote(created.targetId, { title: 'final' })),
      ).rejects.toMatchObject({ code: 'handler_failed' });
      expect(await a.store.get(created.id)).toEqual(before);
      expect(await a.api.flush()).toMatchObject({ succeeded: 1 });
      expect(world.server.seen.map((request) => request.method)).toEqual(['POST']);
    },
  );

  it('readConflict that finds no revision: the row is blocked revision_conflict with its evidence, never resent without one (§10, G5)', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A', {
      // The app reads a field its server names differently: undefined.
      handlers: world.handlers({
        readConflict: (result) => ({
          currentRevision: (JSON.parse(result.body) as { rev?: number }).rev as number,
        }),
      }),
    });
    world.server.editElsewhere(record.id, { title: 'theirs' });
    const mine = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
    await a.api.flush({ force: true });
    expect(world.server.seen.filter((request) => request.method === 'PATCH')).toHaveLength(1);
    expect(world.server.records.get(record.id)?.data).toMatchObject({ title: 'theirs' });
    expect((await a.api.row(mine.id))?.row).toMatchObject({
      state: 'blocked',
      blockedCode: 'revision_conflict',
    });
  });

  it.each([
    { hook: 'readConflict', revision: Number.NaN },
    { hook: 'readConflict', revision: '2' },
    { hook: 'readReceipt', revision: '2' },
  ])(
    '$hook returning the revision $revision blocks the row handler_failed with the reason, never writes a row its codec refuses (G7)',
    async ({ hook, revision }) => {
      world = await World.create(kind);
      const record = world.server.seed(OWNER, { title: 'a' });
      const a = await world.holder('A', {
        handlers: world.handlers(
          hook === 'readConflict'
            ? { readConflict: () => ({ currentRevision: revision as number }) }
            : { readReceipt: () => ({ serverId: record.id, revision: revision as number }) },
        ),
      });
      if (hook === 'readConflict') world.server.editElsewhere(record.id, { title: 'theirs' });
      const mine = await a.api.enqueue(updateNote(record.id, { title: 'mine' }, 1));
      await a.api.flush({ force: true });
      expect((await a.api.row(mine.id))?.row).toMatchObject({
        state: 'blocked',
        blockedCode: 'handler_failed',
        blockedDetail: expect.stringContaining('no number'),
      });
      expect((await a.api.rows()).map((view) => view.row.blockedCode)).toEqual(['handler_failed']);
    },
  );

  it('a conflict on a collection this holder has no handler for blocks the row, never loops', async () => {
    world = await World.create(kind);
    const record = world.server.seed(OWNER, { title: 'a' });
    const a = await world.holder('A');
    const b = await world.holder('B', { handlers: {} });
    const edit = await editMeetingAConflict(a, record.id);
    expect(await b.api.flush()).toMatchObject({ conflicts: 1, blocked: 1 });
    expect((await b.api.row(edit.id))?.row).toMatchObject({
      blockedCode: 'handler_failed',
      blockedDetail: 'no handler for collection "notes"',
    });
    expect(world.server.seen.map((s) => s.key)).toEqual([edit.requestId]);
  });
});
