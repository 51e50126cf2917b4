import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxStore } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';

/**
 * SPEC §7, §19: a flush reads the queue batch by batch and sends each before reading the next,
 * so the first claim does not wait on the outbox's size; what holds rows wherever the queue puts
 * them (§6.1) is read by index first. A record whose rows the scan meets in several batches is
 * read whole once a claim of it was lost, and still goes in the same flush.
 */
describe.each(STORE_KINDS)('a flush reads the queue batch by batch on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  /** Counts the rows the scans returned, and how many had come back at the first claim. */
  function countingScans(store: OutboxStore, seen: { rows: number; atFirstClaim?: number }) {
    return new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== 'function') return value;
        if (key === 'scan')
          return async (...args: Parameters<OutboxStore['scan']>) => {
            const rows = await target.scan(...args);
            seen.rows += rows.length;
            return rows;
          };
        if (key === 'replaceEach' || key === 'replace')
          return async (...args: [never]) => {
            const plans = Array.isArray(args[0]) ? args[0] : [args[0]];
            if (plans.some((p: { reason: string }) => p.reason === 'claim'))
              seen.atFirstClaim ??= seen.rows;
            return Reflect.apply(value, target, args);
          };
        return value.bind(target);
      },
    });
  }

  it('claims the first rows after reading one batch of 1,000 queued, not the whole queue', async () => {
    world = await World.create(kind);
    const seen: { rows: number; atFirstClaim?: number } = { rows: 0 };
    const writer = await world.holder('writer');
    for (let i = 0; i < 1000; i++) await writer.api.enqueue(createNote({ title: `n${i}` }));
    const worker = await world.holder('worker', {
      wrapStore: (store) => countingScans(store, seen),
    });
    const report = await worker.api.flush({ force: true });
    expect(report.claimed).toBe(1000);
    expect(seen.atFirstClaim).toBeDefined();
    expect(seen.atFirstClaim!).toBeLessThanOrEqual(100);
    expect(world.server.effects.length).toBe(1000);
  }, 60_000);

  it('sends in one flush the rows of a record the scan meets in three batches, in their order', async () => {
    world = await World.create(kind);
    const writer = await world.holder('writer');
    const ids: string[] = [];
    for (let i = 1; i <= 120; i++)
      ids.push((await writer.api.enqueue(updateNote(`n${i}`, { title: `t${i}` }))).id);
    // Rows 1, 60 and 120 are made edits of one record, each where its own scan batch reads it.
    const store = writer.store;
    const spread = [ids[0]!, ids[59]!, ids[119]!];
    for (const id of spread) {
      const raw = (await store.get(id)) as Record<string, unknown>;
      const moved = { ...raw, targetId: 'n0' };
      expect(
        await store.replace({
          owner: OWNER,
          expected: [{ id, row: raw }],
          put: [moved],
          reason: 'test',
        }),
      ).toBe('committed');
    }
    const worker = await world.holder('worker');
    const report = await worker.api.flush({ force: true });
    expect(report.claimed).toBe(120);
    const claims = world.log.filter((line) => line.startsWith('claim:worker:'));
    const order = spread.map((id) => claims.findIndex((line) => line.includes(`:${id}:`)));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 60_000);
});
