import { describe, expect, it } from 'vitest';
import {
  createOutboxKit,
  json,
  type KitHooks,
  type LedgerStore,
  problem,
  StoreUnavailableError,
} from '../../server/kit/index.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { batchItem, newKey } from './helpers.ts';

/**
 * The kit's core over a ledger that records what is asked of it: what runs before the ledger
 * (admission, auth), and how storage faults are answered. The ledgers themselves are held to
 * SPEC §15 by the conformance suite (kit-conformance.ts).
 */

/** A ledger that remembers nothing and logs every call; `fail` makes every call throw it. */
function spyLedger(fail?: Error) {
  const calls: string[] = [];
  const ledger: LedgerStore<'tx'> = {
    kind: 'sqlite',
    async lookup() {
      calls.push('lookup');
      if (fail) throw fail;
      return undefined;
    },
    async lookupMany() {
      calls.push('lookupMany');
      if (fail) throw fail;
      return new Map();
    },
    async transact(claim, work) {
      calls.push('transact');
      if (fail) throw fail;
      const answer = await work('tx', () => {});
      if (answer.status >= 300) return { kind: 'refused', answer };
      const response = {
        fingerprint: claim.fingerprint,
        status: answer.status,
        etag: null,
        body: answer.body,
      };
      return { kind: 'applied', response };
    },
    async sweepExpired() {
      return 0;
    },
  };
  return { ledger, calls };
}

function post(path: string, headers: Record<string, string> = {}): Request {
  const item = batchItem('POST', path, { body: { title: 'x' } });
  return new Request(`http://kit.test${path}`, {
    method: 'POST',
    headers: { ...item.headers, ...headers },
    body: item.body,
  });
}

function batchRequest(headers: Record<string, string> = {}): Request {
  const items = [batchItem('POST', '/w', { body: { title: 'x' } })];
  return new Request('http://kit.test/sync/batch', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ items }),
  });
}

describe('the kit core', () => {
  it.each([
    ['a write', () => post('/w')],
    ['a batch', () => batchRequest()],
    ['a receipt lookup', () => new Request(`http://kit.test/idempotency/${newKey()}`)],
  ])(
    'answers %s without a principal 401 with WWW-Authenticate and reads no ledger',
    async (_case, request) => {
      const { ledger, calls } = spyLedger();
      const kit = createOutboxKit({
        ledger,
        authenticate: () => null,
        challenge: 'Bearer realm="t"',
      });
      kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
      const answer = await kit.fetch(request());
      expect(answer.status).toBe(401);
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="t"');
      expect((await answer.json()).type).toBe(PROBLEM.authRequired);
      expect(calls).toEqual([]);
    },
  );

  it.each([
    ['holds a NUL', 'al\0ice'],
    ['is over 1,024 bytes', 'é'.repeat(513)],
  ])(
    'answers 401 with WWW-Authenticate for a principal that %s, which no ledger can key, and reads no ledger',
    async (_case, principal) => {
      const { ledger, calls } = spyLedger();
      const errors: unknown[] = [];
      const kit = createOutboxKit({
        ledger,
        onError: (error) => errors.push(error),
        authenticate: () => principal,
      });
      kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
      for (const request of [post('/w'), batchRequest()]) {
        const answer = await kit.fetch(request);
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toBe('Bearer');
        expect(await answer.json()).toMatchObject({
          type: PROBLEM.authRequired,
          detail: expect.stringContaining('over 1024 bytes'),
        });
      }
      expect(calls).toEqual([]);
      expect(errors).toHaveLength(2);
      // 1,024 bytes exactly is a principal like any other.
      const fits = createOutboxKit({ ledger, authenticate: () => 'é'.repeat(512) });
      fits.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
      expect((await fits.fetch(post('/w'))).status).toBe(201);
    },
  );

  describe('a batch item answered as its request alone (SPEC §15.1)', () => {
    function notesKit() {
      const { ledger } = spyLedger();
      const kit = createOutboxKit({ ledger, onError() {}, authenticate: () => 'alice' });
      let effects = 0;
      kit.route({ method: 'POST', path: '/api/notes', handle: () => json(201, { n: ++effects }) });
      return kit;
    }
    type Item = ReturnType<typeof batchItem>;
    const alone = (item: Item) =>
      notesKit().fetch(
        new Request(`http://kit.test${item.path}`, {
          method: item.method,
          headers: item.headers,
          body: item.body,
        }),
      );
    const inBatch = async (item: Item) => {
      const answer = await notesKit().fetch(
        new Request('http://kit.test/sync/batch', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ items: [item] }),
        }),
      );
      expect(answer.status).toBe(200);
      const [first] = (await answer.json()).items as Array<{ status: number; body: string }>;
      return first!;
    };

    it('reads a method as fetch sends it alone: `post` is POST, `patch` stays `patch`', async () => {
      for (const [method, status] of [
        ['post', 201],
        ['Post', 201],
        ['patch', 404],
      ] as const) {
        const item = batchItem(method, '/api/notes', { body: { title: 'x' } });
        expect([method, (await alone(item)).status]).toEqual([method, status]);
        expect([method, (await inBatch(item)).status]).toEqual([method, status]);
      }
    });

    it('reads a body over the limit that is not JSON as alone: 413 before 415', async () => {
      const item: Item = {
        method: 'POST',
        path: '/api/notes',
        headers: { 'idempotency-key': `"${newKey()}"`, 'content-type': 'text/plain' },
        body: 'x'.repeat(70 * 1024),
      };
      const single = await alone(item);
      const batched = await inBatch(item);
      expect(single.status).toBe(413);
      expect([batched.status, JSON.parse(batched.body).type]).toEqual([
        413,
        (await single.json()).type,
      ]);
    });
  });

  it('answers 503 with Retry-After when the auth hook fails, before the ledger', async () => {
    const { ledger, calls } = spyLedger();
    const kit = createOutboxKit({
      ledger,
      onError() {},
      authenticate: async () => {
        throw new Error('session store down');
      },
    });
    kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
    const answer = await kit.fetch(post('/w'));
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1']);
    expect(calls).toEqual([]);
  });

  it('refuses a batch as a whole with what admit answers (429), before auth and the ledger', async () => {
    const { ledger, calls } = spyLedger();
    let authenticated = 0;
    const kit = createOutboxKit({
      ledger,
      admit: () => problem(429, PROBLEM.tooManyRequests, {}, { 'retry-after': '3' }),
      authenticate: () => {
        authenticated++;
        return 'alice';
      },
    });
    kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
    const answer = await kit.fetch(batchRequest({ authorization: 'Bearer alice' }));
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([429, '3']);
    expect([authenticated, calls]).toEqual([0, []]);
  });

  it.each([
    ['a write', () => post('/w')],
    ['a batch', () => batchRequest()],
  ])('answers %s 503 with Retry-After when storage is unavailable', async (_case, request) => {
    const { ledger } = spyLedger(new StoreUnavailableError('busy'));
    const kit = createOutboxKit({ ledger, authenticate: () => 'alice' });
    kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
    const answer = await kit.fetch(request());
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1']);
    expect((await answer.json()).type).toBe(PROBLEM.unavailable);
  });

  it('leaves requests that are not its own to the app', async () => {
    const { ledger, calls } = spyLedger();
    const kit = createOutboxKit({ ledger, authenticate: () => 'alice' });
    kit.route({ method: 'POST', path: '/w/:id', handle: () => json(201, {}) });
    for (const request of [
      new Request('http://kit.test/w/1'),
      post('/w'),
      post('/w/1/more'),
      new Request('http://kit.test/sync/batch'),
      new Request('http://kit.test/idempotency/a/b'),
    ]) {
      expect(await kit.handle(request)).toBeUndefined();
    }
    expect((await kit.fetch(post('/elsewhere'))).status).toBe(404);
    expect(calls).toEqual([]);
  });

  it('answers OPTIONS of the batch endpoint 204 with the Link that advertises it', async () => {
    const kit = createOutboxKit({ ledger: spyLedger().ledger, authenticate: () => null });
    const answer = await kit.fetch(
      new Request('http://kit.test/sync/batch', { method: 'OPTIONS' }),
    );
    expect(answer.status).toBe(204);
    expect(answer.headers.get('link')).toBe(
      '</sync/batch>; rel="urn:sw-outbox:batch"; max-items=50; max-bytes=262144',
    );
  });

  it('answers a path parameter holding a NUL 400 before the ledger and the handler: no SQL text stores one', async () => {
    const { ledger, calls } = spyLedger();
    const kit = createOutboxKit({ ledger, authenticate: () => 'alice' });
    let handled = 0;
    kit.route({ method: 'POST', path: '/w/:id', handle: () => json(201, { handled: ++handled }) });
    const answer = await kit.fetch(post('/w/a%00b'));
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ type: PROBLEM.badRequest });
    expect([calls, handled]).toEqual([[], 0]);
    expect((await kit.fetch(post('/w/a%01b'))).status).toBe(201);
  });

  it("answers a batch item whose validate throws 500 as its request alone, the other items' writes done", async () => {
    const { ledger } = spyLedger();
    const kit = createOutboxKit({ ledger, onError() {}, authenticate: () => 'alice' });
    kit.route({
      method: 'POST',
      path: '/w',
      // An app's validation with a bug: a body without `title` makes it throw.
      validate: ({ body }) => ({ ok: true, value: (body as { title: string }).title.length }),
      handle: ({ value }) => json(201, { length: value }),
    });
    const broken = batchItem('POST', '/w', { body: { other: 1 } });
    const alone = await kit.fetch(
      new Request('http://kit.test/w', {
        method: 'POST',
        headers: broken.headers,
        body: broken.body,
      }),
    );
    expect(alone.status).toBe(500);
    const request = new Request('http://kit.test/sync/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [batchItem('POST', '/w', { body: { title: 'x' } }), broken] }),
    });
    const answer = await kit.fetch(request);
    expect(answer.status).toBe(200);
    const items = (await answer.json()).items as Array<{ status: number; body: string }>;
    expect(items.map((item) => item.status)).toEqual([201, 500]);
    expect(items[1]!.body).toBe(await alone.text());
    expect(kit.inProgress).toBe(0);
  });

  it('refuses route paths it cannot match', () => {
    const kit = createOutboxKit({ ledger: spyLedger().ledger, authenticate: () => null });
    const handle = () => json(201, {});
    expect(() => kit.route({ method: 'POST', path: 'w', handle })).toThrow(TypeError);
    expect(() => kit.route({ method: 'POST', path: '/w/*', handle })).toThrow(TypeError);
  });

  describe('hooks', () => {
    function hookedKit(hooks: KitHooks, counts: string[] = []) {
      const { ledger, calls } = spyLedger();
      const kit = createOutboxKit({
        ledger,
        authenticate: () => 'alice',
        stats: {
          count: (_principal, counter) => counts.push(counter),
          effect: (_principal, key) => counts.push(`effect ${key.slice(0, 5)}`),
        },
        hooks,
      });
      kit.route({ method: 'POST', path: '/w', handle: () => json(201, { ok: true }) });
      kit.route({
        method: 'POST',
        path: '/conflict',
        handle: () => problem(412, PROBLEM.revisionConflict),
      });
      return { kit, calls };
    }

    it('lets an authenticate hook answer itself: its 401 as it made it, no ledger read', async () => {
      const { ledger, calls } = spyLedger();
      const kit = createOutboxKit({
        ledger,
        authenticate: () =>
          problem(
            401,
            PROBLEM.tokenExpired,
            {},
            { 'www-authenticate': 'Bearer error="invalid_token"' },
          ),
      });
      kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
      const answer = await kit.fetch(post('/w'));
      expect([answer.status, answer.headers.get('www-authenticate')]).toEqual([
        401,
        'Bearer error="invalid_token"',
      ]);
      expect((await answer.json()).type).toBe(PROBLEM.tokenExpired);
      expect(calls).toEqual([]);
    });

    it('runs commit before the transaction with the key in progress, and after it once applied', async () => {
      const steps: string[] = [];
      const { kit, calls } = hookedKit({
        commit(writes, batch) {
          steps.push(
            `writes ${writes.map((w) => `${w.method} ${w.route}`).join()} batch ${batch?.route}`,
          );
          return {
            before: () => {
              steps.push(`before, ledger ${calls.length}`);
            },
            after: (applied) => {
              steps.push(`after ${applied.length}, ledger ${calls.length}`);
              return undefined;
            },
          };
        },
      });
      expect((await kit.fetch(post('/w'))).status).toBe(201);
      expect(steps).toEqual([
        'writes POST /w batch undefined',
        'before, ledger 1',
        'after 1, ledger 2',
      ]);
    });

    it('loses an answer a commit hook drops: Response.error(), after the effect', async () => {
      const counts: string[] = [];
      const { kit, calls } = hookedKit({ commit: () => ({ after: () => 'drop' }) }, counts);
      const lost = await kit.fetch(post('/w'));
      expect(lost.type).toBe('error');
      expect(calls).toContain('transact');
      expect(counts.filter((c) => c.startsWith('effect'))).toHaveLength(1);
      const batch = await kit.fetch(batchRequest());
      expect(batch.type).toBe('error');
    });

    it('refuses one batch item with admitItem, the others run', async () => {
      const { kit } = hookedKit({
        admitItem: (item) =>
          item.route === '/conflict'
            ? problem(503, PROBLEM.unavailable, {}, { 'retry-after': '2' })
            : undefined,
      });
      const request = new Request('http://kit.test/sync/batch', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          items: [
            batchItem('POST', '/conflict', { body: {} }),
            batchItem('POST', '/w', { body: {} }),
          ],
        }),
      });
      const answer = await kit.fetch(request);
      const items = (await answer.json()).items as Array<{
        status: number;
        headers: Record<string, string>;
      }>;
      expect(items.map((item) => [item.status, item.headers['retry-after']])).toEqual([
        [503, '2'],
        [201, undefined],
      ]);
    });

    it('leaves the key free when a commit hook throws: the write fails, its retry is not 409 for ever', async () => {
      let fail = true;
      const { kit, calls } = hookedKit({
        commit() {
          if (fail) throw new Error('metrics down');
          return undefined;
        },
      });
      const request = post('/w');
      const retry = request.clone();
      const failed = await kit.fetch(request);
      expect([failed.status, calls.includes('transact'), kit.inProgress]).toEqual([500, false, 0]);
      fail = false;
      expect((await kit.fetch(retry)).status).toBe(201);
    });

    it('counts replays, conflicts and effects', async () => {
      const counts: string[] = [];
      const { kit } = hookedKit({}, counts);
      await kit.fetch(post('/conflict'));
      await kit.fetch(post('/w'));
      expect(counts).toEqual(['conflicts', expect.stringMatching(/^effect /)]);
    });
  });
});
