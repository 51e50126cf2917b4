import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { createNote } from '../support/intents.ts';

/**
 * SPEC §12 "Recovery pulls the queue forward": after an outage every row waits on its own
 * backoff; the first request that succeeds makes the rest — those the network failed — due at
 * once, in the same flush. Rows a server deferred with Retry-After keep their time.
 */
describe.each(STORE_KINDS)('recovery after an outage on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  /** A row as an outage left it: tried once, queued again with `code`, due `inMs` from now. */
  async function deferAs(id: string, code: string, inMs: number): Promise<void> {
    const store = world.holders[0]!.store;
    const raw = await store.get(id);
    const row = raw as OutboxRow;
    const now = world.clock.now();
    const deferred: OutboxRow = {
      ...row,
      state: 'queued',
      deferredAt: now,
      nextAttemptAt: now + inMs,
      claim: { holderId: 'A', expiresAt: now, fence: 1 },
      writer: { bundle: 'test', at: now },
      evidence: { attemptCount: 1, lastAttemptAt: now, lastErrorCode: code },
    };
    const written = await store.replace({
      owner: OWNER,
      expected: [{ id, row: raw }],
      put: [deferred],
      reason: 'test',
    });
    expect(written).toBe('committed');
  }

  it('one success sends every row the network failed in the same flush; a Retry-After row waits', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await a.api.enqueue(createNote({ n: i }))).id);
    const [first, second, third, fourth, asked] = ids as [string, string, string, string, string];
    // An outage: each row waits on its own backoff, the server asked one of them for a minute.
    await deferAs(first, 'network', 1_000);
    await deferAs(second, 'timeout', 8_000);
    await deferAs(third, 'flush_stopped', 30_000);
    await deferAs(fourth, 'network', 120_000);
    await deferAs(asked, 'http_503', 60_000);

    // Back online: only the first row's backoff has run out.
    world.clock.advance(1_000);
    const report = await a.api.flush();
    expect(report.succeeded).toBe(4);
    expect(world.server.effects.map((e) => e.key)).toEqual([first, second, third, fourth]);
    // The server's Retry-After still holds.
    expect((await world.rows()).map((r) => r.id)).toEqual([asked]);
  });

  it('nothing is pulled forward while no request succeeds', async () => {
    world = await World.create(kind);
    const a = await world.holder('A');
    const one = (await a.api.enqueue(createNote({ n: 1 }))).id;
    const two = (await a.api.enqueue(createNote({ n: 2 }))).id;
    await deferAs(one, 'network', 1_000);
    await deferAs(two, 'network', 30_000);
    world.clock.advance(1_000);
    world.server.inject('network');
    const report = await a.api.flush();
    expect([report.claimed, report.succeeded]).toEqual([1, 0]);
    expect(world.server.effects).toEqual([]);
    expect((await world.row(two))?.nextAttemptAt).toBe(world.clock.now() + 29_000);
  });
});
