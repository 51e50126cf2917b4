import { afterEach, describe, expect, it, vi } from 'vitest';
import type { OwnerApi } from '../../shared/core/outbox-api.ts';
import { createRowFeed, type RowFeed } from '../../shared/core/row-feed.ts';
import type { RowFilter, RowView } from '../../shared/model/page-api.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';

/**
 * Live views (SPEC §13 `subscribe`): after the first read, each committed transaction costs reads
 * of the rows it touched, and every settled snapshot equals what `rows(filter)` reads afresh.
 */
describe.each(STORE_KINDS)('live views on the %s store', (kind) => {
  let world: World;
  let feed: RowFeed | undefined;
  afterEach(() => {
    feed?.close();
    world?.close();
  });

  /** The feed's own store connection, counting reads and failing one row read when asked. */
  function watched(store: OutboxStore) {
    const reads: string[] = [];
    const faults = { failNextRead: false };
    const proxy = new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (['get', 'getMany', 'scan', 'byTarget'].includes(prop as string))
            reads.push(String(prop));
          if (prop === 'getMany' && faults.failNextRead) {
            faults.failNextRead = false;
            return Promise.reject(new Error('disk on fire'));
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    return { store: proxy, reads, faults };
  }

  async function setup() {
    world = await World.create(kind);
    const a = await world.holder('A');
    const api = a.core.forOwner(OWNER) as OwnerApi;
    const feedStore = watched(a.store);
    feed = createRowFeed(api, feedStore.store, OWNER);
    const live = (filter?: RowFilter) => {
      const snapshots: RowView[][] = [];
      feed!.subscribe(filter, (rows) => {
        snapshots.push(rows);
      });
      return {
        snapshots,
        /** Waits until the latest snapshot is what a fresh read returns. */
        settled: () =>
          vi.waitFor(async () => expect(snapshots.at(-1)).toEqual(await api.rows(filter)), {
            timeout: 5_000,
          }),
        statuses: () => snapshots.at(-1)?.map((view) => view.status),
      };
    };
    return { a, api, live, ...feedStore };
  }

  const create = (title: string) => ({ collection: 'notes', kind: 'create', payload: { title } });

  it('follows enqueues, claims, ACKs and removals, reading only the rows each commit touched', async () => {
    const { a, api, live, reads } = await setup();
    const all = live();
    await all.settled();
    expect(all.snapshots).toEqual([[]]);
    reads.length = 0;

    const first = await api.enqueue(create('one'));
    const second = await api.enqueue(create('two'));
    await all.settled();
    expect(all.snapshots.at(-1)?.map((view) => view.id)).toEqual([first.id, second.id]);

    const { done } = await world.holdInFlight(a, first.id);
    await all.settled();
    expect(all.statuses()).toContain('sending');
    a.transport.open();
    await done;
    await all.settled();
    expect(all.snapshots.at(-1)).toEqual([]);
    // No scan after the first read: one read of the rows each commit named.
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads)).toEqual(new Set(['getMany']));
  });

  it('a filtered view sees intents, successors and conversions exactly as a fresh read does', async () => {
    const { a, api, live } = await setup();
    const created = await api.enqueue(create('draft'));
    const record = live({ collection: 'notes', targetId: created.targetId });
    const everything = live();
    await Promise.all([record.settled(), everything.settled()]);

    const { done } = await world.holdInFlight(a, created.id);
    const edit = await api.enqueue({
      collection: 'notes',
      kind: 'update',
      targetId: created.targetId,
      payload: { title: 'edited' },
    });
    await api.enqueue(create('other'));
    await Promise.all([record.settled(), everything.settled()]);
    expect(record.statuses()).toEqual(['sending', 'intent']);
    expect(everything.snapshots.at(-1)).toHaveLength(3);

    a.transport.open();
    await done;
    // The intent became an update of the server id: it left the pending record's view.
    await Promise.all([record.settled(), everything.settled()]);
    expect(record.snapshots.at(-1)).toEqual([]);
    expect(everything.snapshots.at(-1)?.some((view) => view.id === edit.id)).toBe(false);
    await api.flush();
    await Promise.all([record.settled(), everything.settled()]);
    expect(everything.snapshots.at(-1)).toEqual([]);
  });

  it('after a failed read it reads everything again, and loses no change', async () => {
    const { api, live, reads, faults } = await setup();
    const all = live();
    await all.settled();
    faults.failNextRead = true;
    const lost = await api.enqueue(create('lost read'));
    await vi.waitFor(() => expect(faults.failNextRead).toBe(false), { timeout: 5_000 });
    reads.length = 0;
    const next = await api.enqueue(create('next'));
    await all.settled();
    expect(all.snapshots.at(-1)?.map((view) => view.id)).toEqual([lost.id, next.id]);
    // Read afresh through `rows`, not row by row: the feed's connection read nothing itself.
    expect(reads).toEqual([]);
  });
});
