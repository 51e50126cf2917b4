import { afterEach, describe, expect, it } from 'vitest';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import type { EnqueueResult } from '../../shared/model/page-api.ts';
import { decodeRow } from '../../shared/model/row.ts';
import type { OutboxStore, ReplacePlan } from '../../shared/model/store.ts';
import { planClaim } from '../../shared/plan/claim.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';
import { modelFetchTransport } from '../support/model-fetch.ts';

/**
 * SPEC §15.1, the client half: rows claimed in one transaction, sent as one request through
 * the real fetch transport, settled in one transaction, each row checked on its own — with
 * every per-row rule of §4–§10 unchanged. On both stores, against the model server.
 */

/** A holder on the real fetch transport over the model server; `batch` as the handler's. */
async function batchHolder(
  world: World,
  name: string,
  options: {
    batch?: CollectionHandler['batch'];
    wrapStore?: (store: OutboxStore) => OutboxStore;
    random?: () => number;
  } = {},
) {
  const { net, transport } = modelFetchTransport(world.server, world.clock);
  const handler = {
    ...restHandler({
      baseUrl: '/api/notes',
      ...(options.batch === undefined ? {} : { batch: options.batch }),
    }),
    // The model server takes an edit without If-Match; these scenarios make some.
    requiresRevision: false,
  };
  const holder = await world.holder(name, {
    transport,
    handlers: { notes: handler },
    ...(options.wrapStore ? { wrapStore: options.wrapStore } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  return { holder, net };
}

/** Counts the store's commits (`replace` and `replaceEach`), by reason of their first plan. */
function countingCommits(store: OutboxStore, commits: string[]): OutboxStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop === 'replace' || prop === 'replaceEach') {
        return (plans: ReplacePlan | ReplacePlan[]) => {
          const first = Array.isArray(plans) ? plans[0] : plans;
          commits.push(first?.reason ?? 'other');
          return (value as (p: unknown) => unknown).call(target, plans);
        };
      }
      return value.bind(target);
    },
  });
}

describe.each(STORE_KINDS)('batches on the %s store (SPEC §15.1)', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it('sends 120 rows as three requests of at most 50, claimed and settled in one transaction each, one effect per row', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const commits: string[] = [];
    const { holder, net } = await batchHolder(world, 'A', {
      batch: { url: '/sync/batch' },
      wrapStore: (store) => countingCommits(store, commits),
    });
    const keys: string[] = [];
    for (let i = 0; i < 120; i++)
      keys.push((await holder.api.enqueue(createNote({ title: `n${i}` }))).requestId!);
    commits.length = 0;
    const report = await holder.api.flush();
    expect(report).toMatchObject({ claimed: 120, succeeded: 120, stale: 0 });
    expect(net.wire.map((w) => w.url)).toEqual(['/sync/batch', '/sync/batch', '/sync/batch']);
    expect(world.server.batches.map((b) => b.length)).toEqual([50, 50, 20]);
    expect(world.server.batches.flat()).toEqual(keys);
    expect(world.server.effects.map((e) => e.key)).toEqual(keys);
    // One claim and one ACK transaction per batch (claims of the next batch may share one).
    expect(commits.length).toBeLessThanOrEqual(6);
    expect(await world.rows()).toEqual([]);
    const receipts = await holder.api.receipts({ limit: 200 });
    expect(receipts).toHaveLength(120);
  });

  it('finds the endpoint from the server’s Link and batches from then on', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    world.server.advertiseBatches = true;
    const { holder, net } = await batchHolder(world, 'A');
    await holder.api.enqueue(createNote({ title: 'first' }));
    await holder.api.flush();
    for (let i = 0; i < 5; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    await holder.api.flush();
    expect(net.wire.map((w) => w.url)).toEqual(['/api/notes', '/sync/batch']);
    expect(world.server.batches.map((b) => b.length)).toEqual([5]);
    expect(world.server.effects).toHaveLength(6);
  });

  it('sends no more rows alone than the sending slots before its origin first answers; the rest, once the answer named the endpoint, as one batch', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    world.server.advertiseBatches = true;
    const { holder, net } = await batchHolder(world, 'A');
    const keys: string[] = [];
    for (let i = 0; i < 12; i++)
      keys.push((await holder.api.enqueue(createNote({ title: `n${i}` }))).requestId!);
    net.hold();
    const flushing = holder.api.flush();
    await world.until(() => net.wire.length === 4, 'four rows on the wire (concurrency 4)');
    // Until the origin answers, the other rows wait unclaimed: they may share the endpoint.
    await world.settle();
    expect(net.wire).toHaveLength(4);
    expect(world.log.filter((entry) => entry.startsWith('claim:'))).toHaveLength(4);
    net.release();
    expect(await flushing).toMatchObject({ claimed: 12, succeeded: 12 });
    expect(net.wire.map((w) => w.url)).toEqual([...Array(4).fill('/api/notes'), '/sync/batch']);
    expect(world.server.batches).toEqual([keys.slice(4)]);
    expect(world.server.effects.map((e) => e.key).sort()).toEqual([...keys].sort());
  });

  it('on an origin that answers without a Link, waits for its first answer only: then every slot sends alone', async () => {
    world = await World.create(kind);
    const { holder, net } = await batchHolder(world, 'A');
    for (let i = 0; i < 8; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    net.hold();
    const flushing = holder.api.flush();
    await world.until(() => net.wire.length === 4, 'four rows on the wire');
    await world.settle();
    expect(net.wire).toHaveLength(4);
    net.release();
    net.hold();
    // The origin has answered: the other four are on the wire at once.
    await world.until(() => net.wire.length === 8, 'the other rows on the wire together');
    net.release();
    expect(await flushing).toMatchObject({ claimed: 8, succeeded: 8 });
    expect(net.wire.map((w) => w.url)).toEqual(Array(8).fill('/api/notes'));
    expect(world.server.effects).toHaveLength(8);
    expect(await world.rows()).toEqual([]);
  });

  it('resends a batch whose answer was lost after the server committed with the same keys and bytes: one effect each', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const { holder } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    const keys: string[] = [];
    for (let i = 0; i < 4; i++)
      keys.push((await holder.api.enqueue(createNote({ title: `n${i}` }))).requestId!);
    world.server.inject('drop');
    const lost = await holder.api.flush();
    expect(lost).toMatchObject({ transient: 4, stopped: 'offline' });
    expect(world.server.effects).toHaveLength(4);
    const kept = await world.rows();
    expect(kept.map((r) => r.request?.requestId)).toEqual(keys);
    world.clock.advance(LEASE);
    const again = await holder.api.flush({ force: true });
    expect(again).toMatchObject({ succeeded: 4 });
    expect(world.server.batches).toEqual([keys, keys]);
    expect(keys.map((key) => world.server.effectsFor(key))).toEqual([1, 1, 1, 1]);
    expect(await world.rows()).toEqual([]);
  });

  it('brings rows that failed together in a batch back together: one backoff for the batch, one request again', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    let draw = 0;
    const { holder, net } = await batchHolder(world, 'A', {
      batch: { url: '/sync/batch' },
      random: () => [0.1, 0.5, 0.9][draw++ % 3]!,
    });
    for (let i = 0; i < 3; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    world.server.inject('network');
    const failed = await holder.api.flush();
    expect(failed).toMatchObject({ transient: 3, stopped: 'offline' });
    const due = (await world.rows()).map((row) => row.nextAttemptAt);
    expect(new Set(due).size).toBe(1);
    world.clock.set(due[0]!);
    expect(await holder.api.flush()).toMatchObject({ succeeded: 3 });
    expect(net.wire.map((w) => w.url)).toEqual(['/sync/batch', '/sync/batch']);
  });

  it('gives an item that conflicts its durable successor while the other rows of the batch settle', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const { holder } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    const records = [0, 1, 2].map((i) => world.server.seed(OWNER, { title: `r${i}` }));
    const sent: EnqueueResult[] = [];
    for (const record of records)
      sent.push(await holder.api.enqueue(updateNote(record.id, { title: 'mine' }, 1)));
    world.server.editElsewhere(records[1]!.id, { title: 'theirs' });
    const report = await holder.api.flush();
    expect(world.server.batches[0]).toEqual(sent.map((s) => s.requestId));
    expect(report).toMatchObject({ conflicts: 1, succeeded: 3 });
    // The successor was written before it was sent (G5), then went out on its own.
    const conflict = world.log.find((l) => l.startsWith(`conflict:A:${sent[1]!.id}->`));
    expect(conflict).toBeDefined();
    const successorKey = world.server.effects.find((e) => e.id === records[1]!.id)?.key;
    expect(successorKey).not.toBe(sent[1]!.requestId);
    expect(world.server.effects.map((e) => e.id).sort()).toEqual(records.map((r) => r.id).sort());
    expect(await holder.api.conflicts()).toHaveLength(1);
    expect(await world.rows()).toEqual([]);
  });

  it('holds every row of a batch answered 401 and applies nothing', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const { holder } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    for (let i = 0; i < 3; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    world.server.inject('unauthorized');
    const report = await holder.api.flush();
    expect(report).toMatchObject({ held: 3, succeeded: 0 });
    expect((await world.rows()).map((r) => r.state)).toEqual(['held', 'held', 'held']);
    expect(world.server.effects).toEqual([]);
  });

  it('never puts two rows of one record in a batch: the successor goes after its predecessor’s answer', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    const { holder, net } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    const [r0, r1] = [world.server.seed(OWNER, { n: 0 }), world.server.seed(OWNER, { n: 1 })];
    const first = await holder.api.enqueue(updateNote(r0.id, { step: 1 }));
    // While the first edit is on the wire, the next one is its successor (§6).
    net.hold();
    const flushing = holder.api.flush();
    await world.until(() => net.wire.length === 1, 'the first edit on the wire');
    const second = await holder.api.enqueue(updateNote(r0.id, { step: 2 }));
    world.server.inject('fail503');
    net.release();
    await flushing;
    // Both edits of r0 are queued now, the second waiting for the first (G4).
    const other = await holder.api.enqueue(updateNote(r1.id, { step: 1 }));
    world.clock.advance(LEASE);
    await holder.api.flush({ force: true });
    expect(world.server.batches).toEqual([[first.requestId, other.requestId]]);
    expect(net.wire.map((w) => `${w.url} ${w.key}`)).toEqual([
      `/api/notes/${r0.id} ${first.requestId}`,
      '/sync/batch ',
      `/api/notes/${r0.id} ${second.requestId}`,
    ]);
    expect(world.server.effects.filter((e) => e.id === r0.id).map((e) => e.key)).toEqual([
      first.requestId,
      second.requestId,
    ]);
    expect(await world.rows()).toEqual([]);
  });

  it('sends each row alone when the server has no batch endpoint, remembers that, and loses nothing', async () => {
    world = await World.create(kind);
    const { holder, net } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    for (let i = 0; i < 3; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    const report = await holder.api.flush();
    expect(report).toMatchObject({ claimed: 3, succeeded: 3 });
    for (let i = 3; i < 6; i++) await holder.api.enqueue(createNote({ title: `n${i}` }));
    await holder.api.flush();
    expect(net.wire.map((w) => w.url)).toEqual(['/sync/batch', ...Array(6).fill('/api/notes')]);
    expect(world.server.effects).toHaveLength(6);
    expect(await world.rows()).toEqual([]);
  });

  it('blocks only the row whose item the server rejects (422); the others settle', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    world.server.reject = (request) =>
      request.body?.includes('"bad"')
        ? { status: 422, body: { type: 'validation-failed', detail: 'title' } }
        : undefined;
    const { holder } = await batchHolder(world, 'A', { batch: { url: '/sync/batch' } });
    await holder.api.enqueue(createNote({ title: 'good' }));
    const bad = await holder.api.enqueue(createNote({ title: 'bad' }));
    await holder.api.enqueue(createNote({ title: 'fine' }));
    const report = await holder.api.flush();
    expect(world.server.batches).toHaveLength(1);
    expect(report).toMatchObject({ succeeded: 2, blocked: 1 });
    const rows = await world.rows();
    expect(rows.map((r) => [r.id, r.state, r.blockedCode])).toEqual([
      [bad.id, 'blocked', 'http_422'],
    ]);
    expect(world.server.effects).toHaveLength(2);
  });

  it('skips a row another holder claimed between selection and the batch’s claim, and sends the rest together', async () => {
    world = await World.create(kind);
    world.server.batchPath = '/sync/batch';
    let stolen: string | undefined;
    let b: OutboxStore | undefined;
    const { holder } = await batchHolder(world, 'A', {
      batch: { url: '/sync/batch' },
      wrapStore: (store) =>
        new Proxy(store, {
          get(target, prop, receiver) {
            const value = Reflect.get(target, prop, receiver);
            if (prop !== 'replaceEach' || typeof value !== 'function')
              return typeof value === 'function' ? value.bind(target) : value;
            return async (plans: ReplacePlan[]) => {
              // Just before A's claims commit, B takes the second row (SPEC §18 row 2).
              if (stolen === undefined && plans[0]?.reason === 'claim' && plans.length > 1) {
                stolen = (plans[1]!.put![0] as { id: string }).id;
                const raw = await b!.get(stolen);
                const decoded = decodeRow(raw);
                if (!decoded.ok) throw new Error('corrupt');
                const claim = planClaim(decoded.row, raw, {
                  owner: OWNER,
                  holderId: 'B',
                  now: world.clock.now(),
                  leaseMs: LEASE,
                  bundle: 'test',
                });
                if (claim.kind !== 'claim') throw new Error('not claimable');
                expect(await b!.replace(claim.plan)).toBe('committed');
              }
              return (value as (p: ReplacePlan[]) => unknown).call(target, plans);
            };
          },
        }),
    });
    b = (await world.holder('B')).store;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await holder.api.enqueue(createNote({ title: `n${i}` }))).id);
    const report = await holder.api.flush();
    expect(stolen).toBe(ids[1]);
    expect(report).toMatchObject({ claimed: 2, stale: 1, succeeded: 2 });
    expect(world.server.batches).toHaveLength(1);
    expect(world.server.batches[0]).toHaveLength(2);
    expect(await world.row(ids[1]!)).toMatchObject({
      state: 'sending',
      claim: { holderId: 'B', fence: 1 },
    });
  });
});
