import { describe, expect, it, vi } from 'vitest';
import { createRowFeed } from '../../shared/core/row-feed.ts';
import { createEndpoint } from '../../shared/runtime/endpoint.ts';
import { createSender, type Sender } from '../../shared/runtime/sender.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §13 "Credentials": a worker restarted without the page's (memory-only) token holds rows
 * instead of sending them anonymously; the page's next `setAuth` — sent again on every reconnect
 * — lets those rows go. Rows a server rejected with 401 wait for the app's `resumeHeld`.
 */

const OWNER = 'alice';
const TOKENS: Record<string, number> = { 'Bearer good': 201, 'Bearer expired': 401 };

function world() {
  const store = createMemoryStore({ name: `auth-${Math.random()}` });
  const seen: Array<{ key: string | null; auth: string | null }> = [];
  const fetch = (async (_url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    const auth = headers.get('authorization');
    seen.push({ key: headers.get('idempotency-key'), auth });
    const status = (auth === null ? undefined : TOKENS[auth]) ?? 401;
    return status === 201
      ? new Response(JSON.stringify({ id: `n${seen.length}`, revision: 1 }), {
          status,
          headers: { 'content-type': 'application/json', etag: '"1"' },
        })
      : new Response(null, { status, headers: { 'www-authenticate': 'Bearer' } });
  }) as typeof globalThis.fetch;
  const start = (): Sender =>
    createSender(
      {
        collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
        store: async () => store,
        fetch,
      },
      { kind: 'sw', owners: async () => [OWNER] },
    );
  const connect = async (sender: Sender) => {
    const api = (await sender.core()).forOwner(OWNER);
    return createEndpoint({
      owner: OWNER,
      holderId: sender.holderId,
      bundle: 'test',
      api,
      feed: createRowFeed(api, store, OWNER),
      credentials: sender.credentials,
    }).api;
  };
  return { seen, start, connect };
}

const statusOf = async (sender: Sender, id: string) =>
  (await (await sender.core()).forOwner(OWNER).row(id))?.status;

/**
 * A row enqueued by a page that handed over a memory-only token, then a worker restart (the
 * browser stopped it) whose first flush finds no token.
 */
async function heldAfterRestart(w: ReturnType<typeof world>) {
  const page = await w.connect(w.start());
  await page.setAuth({ authorization: 'Bearer good' });
  const { id } = await page.enqueue({ collection: 'notes', kind: 'create', payload: { t: 1 } });
  const restarted = w.start();
  const report = await (await restarted.core()).flush(OWNER);
  return { id, restarted, report };
}

describe('credentials handed over after a restart (SPEC §13)', () => {
  it('rows held for want of credentials go once the page hands them over again', async () => {
    const w = world();
    const { seen, connect } = w;
    const { id, restarted, report } = await heldAfterRestart(w);
    expect(report.held).toBe(1);
    expect(await statusOf(restarted, id)).toBe('held');
    expect(seen).toEqual([]);

    // The page reconnects and hands its token over again: the row goes, with it.
    await (await connect(restarted)).setAuth({ authorization: 'Bearer good' });
    await vi.waitFor(async () => expect(await statusOf(restarted, id)).toBeUndefined(), {
      timeout: 5_000,
    });
    expect(seen).toEqual([{ key: `"${id}"`, auth: 'Bearer good' }]);
  });

  it('rows a server answered 401 stay held until the app calls resumeHeld', async () => {
    const { seen, start, connect } = world();
    const sender = start();
    const page = await connect(sender);
    await page.setAuth({ authorization: 'Bearer expired' });
    const { id } = await page.enqueue({ collection: 'notes', kind: 'create', payload: { t: 2 } });
    await (await sender.core()).flush(OWNER);
    expect(await statusOf(sender, id)).toBe('held');

    await page.setAuth({ authorization: 'Bearer good' });
    expect(await statusOf(sender, id)).toBe('held');
    expect(seen).toHaveLength(1);

    expect(await page.resumeHeld()).toBe(1);
    await (await sender.core()).flush(OWNER);
    expect(await statusOf(sender, id)).toBeUndefined();
    expect(seen.map((s) => s.auth)).toEqual(['Bearer expired', 'Bearer good']);
  });

  it('forgetting the credentials resumes nothing', async () => {
    const w = world();
    const { id, restarted } = await heldAfterRestart(w);
    await (await w.connect(restarted)).setAuth(null);
    expect(await statusOf(restarted, id)).toBe('held');
    expect(w.seen).toEqual([]);
  });
});
