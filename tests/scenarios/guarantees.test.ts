import { afterEach, describe, expect, it } from 'vitest';
import { createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { LEASE, OWNER, STORE_KINDS, World } from '../support/harness.ts';
import { updateNote } from '../support/intents.ts';
import { modelFetch } from '../support/model-fetch.ts';

/**
 * The ways a guarantee could be broken that an independent read of the core found, each
 * reproduced through the owner API, the dispatcher and the model server on both stores.
 */

const ORIGIN = 'https://app.test';

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

describe.each(STORE_KINDS)('guarantees on the %s store', (kind) => {
  let world: World;
  afterEach(() => world?.close());

  it('G3: a request whose auth hook outlasts its claim never leaves, so it cannot land over the newer edit', async () => {
    world = await World.create(kind);
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
});
