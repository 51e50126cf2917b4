import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxStore, ReplacePlan, ReplaceResult } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, updateNote } from '../support/intents.ts';
import { type Gate, passGate } from '../support/store-wrap.ts';

/**
 * SPEC §7, §19: a flush reads the queue batch by batch and sends each before reading the next,
 * so the first claim does not wait on the outbox's size; what holds rows wherever the queue puts
 * them (§6.1) is read by index first. A record whose rows the scan meets in several batches is
 * read whole once a claim of it was lost, and still goes in the same flush.
 */
/**
 * Queues 120 edits, each of its own record, then rewrites every row with `rewrite`: rows 1, 60
 * and 120 (`inRecord`) are to become edits of one record, each where its own scan batch reads
 * it. Returns their ids in queue order.
 */
async function spreadRecord(
  world: World,
  rewrite: (raw: Record<string, unknown>, inRecord: boolean) => Record<string, unknown>,
): Promise<string[]> {
  const writer = await world.holder('writer');
  const ids: string[] = [];
  for (let i = 1; i <= 120; i++)
    ids.push((await writer.api.enqueue(updateNote(`n${i}`, { title: `t${i}` }))).id);
  const spread = [ids[0]!, ids[59]!, ids[119]!];
  for (const id of ids) {
    const raw = (await writer.store.get(id)) as Record<string, unknown>;
    const moved = rewrite(raw, spread.includes(id));
    if (moved === raw) continue;
    const plan = { owner: OWNER, expected: [{ id, row: raw }], put: [moved], reason: 'test' };
    expect(await writer.store.replace(plan)).toBe('committed');
  }
  return spread;
}

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
    const spread = await spreadRecord(world, (raw, inRecord) =>
      inRecord ? { ...raw, targetId: 'n0' } : raw,
    );
    const worker = await world.holder('worker');
    const report = await worker.api.flush({ force: true });
    expect(report.claimed).toBe(120);
    const claims = world.log.filter((line) => line.startsWith('claim:worker:'));
    const order = spread.map((id) => claims.findIndex((line) => line.includes(`:${id}:`)));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 60_000);

  it('sends a record whose first claim is lost after the next batch was read but before that batch chose its rows', async () => {
    world = await World.create(kind);
    // The first row of the record follows an edit of it that was settled and is gone (as the
    // rows a Workbox route queues for one URL do), so every batch that meets the record looks it
    // up. The other rows wait out a backoff: only the record's rows go.
    let first = true;
    const spread = await spreadRecord(world, (raw, inRecord) => {
      if (!inRecord) return { ...raw, nextAttemptAt: world.clock.now() + 3_600_000 };
      const moved = first
        ? { ...raw, targetId: 'n0', successorOf: 'settled-edit' }
        : { ...raw, targetId: 'n0' };
      first = false;
      return moved;
    });
    // The first batch saw one row of the record, so the claim it makes is lost. That claim is
    // held until the second batch has been read and its rows are being looked at: the loss is
    // learnt after that batch was added to what the flush knows, before it chose its rows.
    const firstClaim: Gate = { waiting: [], open: false };
    let lost: Promise<ReplaceResult[]> | undefined;
    let scans = 0;
    const claimsFirst = (plans: readonly ReplacePlan[]) =>
      plans.some((plan) => plan.reason === 'claim' && plan.expected[0]?.id === spread[0]);
    const worker = await world.holder('worker', {
      wrapStore: (own) =>
        new Proxy(own, {
          get(target, name) {
            const value = Reflect.get(target, name);
            if (typeof value !== 'function') return value;
            if (name === 'scan')
              return async (...args: Parameters<OutboxStore['scan']>) => {
                const rows = await target.scan(...args);
                scans++;
                return rows;
              };
            if (name === 'replaceEach')
              return (plans: ReplacePlan[]) => {
                if (lost !== undefined || !claimsFirst(plans)) return target.replaceEach(plans);
                lost = passGate(firstClaim).then(() => target.replaceEach(plans));
                return lost;
              };
            if (name === 'get')
              return async (...args: Parameters<OutboxStore['get']>) => {
                if (args[0] === 'settled-edit' && scans === 2 && !firstClaim.open) {
                  firstClaim.open = true;
                  for (const go of firstClaim.waiting.splice(0)) go();
                  expect(await lost).toEqual(['stale']);
                  await world.settle();
                }
                return target.get(...args);
              };
            return value.bind(target);
          },
        }),
    });
    const report = await worker.api.flush();
    expect(firstClaim.open).toBe(true);
    expect(report.claimed).toBe(3);
    // Every row of the record went in this flush, one after another in the order made.
    const sends = world.log.filter((line) => line.startsWith('send:worker:'));
    expect(sends).toEqual(spread.map((id) => `send:worker:${id}`));
  }, 60_000);
});
