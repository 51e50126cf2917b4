import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxStore, ReplacePlan, ReplaceResult } from '../../shared/model/store.ts';
import { OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { updateNote } from '../support/intents.ts';

/**
 * Ways to break a guarantee that the simulation of SPEC §20 found in the fixed core, each
 * reproduced here through the owner API and the dispatcher on both stores.
 */

/** Enqueue commits wait at this gate until the test lets one through or opens it. */
interface Gate {
  waiting: Array<() => void>;
  open: boolean;
}

/** A store whose enqueue commits wait at a gate the test opens. */
function gatedEnqueues(gate: Gate) {
  return (store: OutboxStore): OutboxStore =>
    new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        if (name !== 'replace') return value.bind(target);
        return async (plan: ReplacePlan): Promise<ReplaceResult> => {
          if (plan.reason === 'enqueue' && !gate.open)
            await new Promise<void>((go) => gate.waiting.push(go));
          return target.replace(plan);
        };
      },
    });
}

describe.each(STORE_KINDS)('what the simulation found, on the %s store', (kind) => {
  let world: World;
  afterEach(() => world.close());

  it('G4: two edits of one record enqueued at once never both land blind: the later one merges with the earlier', async () => {
    world = await World.create(kind);
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
});
