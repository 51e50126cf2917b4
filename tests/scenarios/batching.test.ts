import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxStore } from '../../shared/model/store.ts';
import { LEASE, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';

/** SPEC §4 batching and §7 cost: claims and ACKs share transactions; each row still checked alone. */
describe.each(STORE_KINDS)('batched claims and ACKs on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  function countingCommits(
    store: OutboxStore,
    counter: { commits: number; lookups?: number },
  ): OutboxStore {
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        if (prop === 'replace' || prop === 'replaceEach' || prop === 'get' || prop === 'byTarget') {
          return (...args: unknown[]) => {
            if (prop === 'get' || prop === 'byTarget') counter.lookups = (counter.lookups ?? 0) + 1;
            else counter.commits++;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return value.bind(target);
      },
    });
  }

  it('sends 60 rows with well under two IndexedDB commits per row and no per-row reads, each row once', async () => {
    world = await World.create(kind);
    const counter = { commits: 0, lookups: 0 };
    const a = await world.holder('A', { wrapStore: (store) => countingCommits(store, counter) });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      ids.push(
        (await a.api.enqueue({ collection: 'notes', kind: 'create', payload: { title: `n${i}` } }))
          .requestId!,
      );
    }
    counter.commits = 0;
    counter.lookups = 0;
    const report = await a.api.flush();
    expect(report).toMatchObject({ claimed: 60, succeeded: 60 });
    expect(world.server.effects.map((e) => e.key).sort()).toEqual([...ids].sort());
    expect(counter.commits / 60).toBeLessThan(1.5);
    // Each ACK bets that its record holds just the sent row, and the transaction checks it.
    expect(counter.lookups).toBe(0);
    expect(await world.rows()).toEqual([]);
  });

  it('commits at most plansPerCommit claims and ACKs in one transaction, so an enqueue made while a drain writes waits behind one short transaction', async () => {
    world = await World.create(kind);
    const sizes: number[] = [];
    const a = await world.holder('A', {
      plansPerCommit: 4,
      wrapStore: (store) =>
        new Proxy(store, {
          get(target, prop, receiver) {
            const value = Reflect.get(target, prop, receiver);
            if (prop !== 'replaceEach')
              return typeof value === 'function' ? value.bind(target) : value;
            return (plans: unknown[]) => {
              sizes.push(plans.length);
              return (value as (p: unknown[]) => unknown).call(target, plans);
            };
          },
        }),
    });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++)
      ids.push((await a.api.enqueue(createNote({ title: `n${i}` }))).requestId!);
    const report = await a.api.flush();
    expect(report).toMatchObject({ claimed: 30, succeeded: 30 });
    expect(world.server.effects.map((e) => e.key).sort()).toEqual([...ids].sort());
    // The claims of a scan and the ACKs of its answers are gathered; none commit more than 4 at once.
    expect(Math.max(...sizes)).toBe(4);
    expect(await world.rows()).toEqual([]);
  });

  it('keeps rows of one record in order while other records go concurrently', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const records = [0, 1, 2].map((i) => world.server.seed('user-1', { title: `r${i}` }));
    a.transport.close();
    const keys: string[][] = records.map(() => []);
    for (const [i, record] of records.entries()) {
      keys[i]!.push((await a.api.enqueue(updateNote(record.id, { step: 1 }))).requestId!);
    }
    const flush = a.api.flush();
    await world.until(
      () => world.log.filter((l) => l.startsWith('claim:')).length === 3,
      'all three claimed',
    );
    for (const [i, record] of records.entries()) {
      keys[i]!.push((await a.api.enqueue(updateNote(record.id, { step: 2 }))).requestId!);
    }
    a.transport.open();
    await flush;
    for (const [i, record] of records.entries()) {
      expect(world.server.effects.filter((e) => e.id === record.id).map((e) => e.key)).toEqual(
        keys[i],
      );
    }
  });

  it('claims the next rows while requests are in flight, but never sends on a claim that waited past half its lease', async () => {
    world = await World.create(kind);
    const a = await world.holder('A', { concurrency: 1 });
    const first = await a.api.enqueue(createNote({ title: 'one' }));
    const second = await a.api.enqueue(createNote({ title: 'two' }));
    a.transport.close();
    const flush = a.api.flush();
    await world.until(
      () => world.log.filter((l) => l.startsWith('claim:A:')).length === 2,
      'both rows claimed while one request may be on the network',
    );
    expect(world.server.seen).toHaveLength(0);
    world.clock.advance(LEASE / 2 + 1);
    a.transport.open();
    await flush;
    expect(world.server.seen.map((s) => s.key)).toEqual([first.requestId]);
    expect(await world.row(second.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'lease_lapsed' },
    });
    await a.api.flush({ force: true });
    expect(world.server.effects.map((e) => e.key)).toEqual([first.requestId, second.requestId]);
  });

  it('puts rows claimed ahead back unsent when the network fails under the flush', async () => {
    world = await World.create(kind);
    const a = await world.holder('A', { concurrency: 1 });
    const first = await a.api.enqueue(createNote({ title: 'one' }));
    const second = await a.api.enqueue(createNote({ title: 'two' }));
    world.server.inject('network');
    const report = await a.api.flush();
    expect(report.stopped).toBe('offline');
    expect(world.log.filter((l) => l.startsWith('send:'))).toEqual([`send:A:${first.requestId}`]);
    expect(await world.row(second.id)).toMatchObject({
      state: 'queued',
      evidence: { lastErrorCode: 'flush_stopped' },
    });
    expect((await world.row(second.id))?.sentAt).toBeUndefined();
  });
});
