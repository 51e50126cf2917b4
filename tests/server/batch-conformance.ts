import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer, ServerStore } from '../../server/index.ts';
import { StoreUnavailableError } from '../../server/index.ts';
import { BATCH_LINK_REL, type BatchItemAnswer, parseBatchLink } from '../../shared/wire/batch.ts';
import {
  type Answer,
  Api,
  batchItem,
  newKey,
  newUser,
  send,
  startTestServer,
  type WriteOptions,
} from './helpers.ts';

/**
 * The batch endpoint of SPEC §15.1 over a real socket, on every adapter: each item is answered
 * as its request alone would be (same checks, same ledger, same bytes), items are independent,
 * and the batch's own answers (401, 413, 503, 400 for an envelope that is none) come first.
 */
export function defineBatchConformance(
  getServer: () => RunningServer,
  getStore: () => ServerStore,
): void {
  describe('batches (SPEC §15.1)', () => {
    const login = (user = newUser()) => Api.login(getServer().url, user);
    const items = (answer: Answer): BatchItemAnswer[] => {
      expect(answer.status, answer.text).toBe(200);
      return answer.json.items;
    };
    const body = (item: BatchItemAnswer) => JSON.parse(item.body);
    const fault = (rule: Record<string, unknown>) =>
      send(
        getServer().url,
        'POST',
        '/__faults',
        { 'content-type': 'application/json' },
        JSON.stringify(rule),
      );

    it('keeps what a batched write supersedes and names it in a batched 412, as a write alone does (SPEC §10.1)', async () => {
      const api = await login();
      const note = (await api.create('draft')).json;
      const key = newKey();
      const [updated, stale] = items(
        await api.batch([
          batchItem('PATCH', `/api/notes/${note.id}`, {
            body: { body: 'batched' },
            ifMatch: 1,
            key,
          }),
          batchItem('PATCH', `/api/notes/${note.id}`, { body: { body: 'stale' }, ifMatch: 1 }),
        ]),
      );
      expect(updated!.status).toBe(200);
      expect(stale!.status).toBe(412);
      expect(body(stale!).history).toEqual({
        revision: 2,
        href: `/api/notes/${note.id}/history/2`,
      });
      expect((await api.get(`/api/notes/${note.id}/history/1`)).json).toMatchObject({
        revision: 1,
        value: { title: 'draft', body: '' },
        supersededBy: key,
      });
    });

    it('answers a mixed batch per item, in order: 201, 412, 422 key reused, 400 no key, 422 invalid', async () => {
      const api = await login();
      const note = (await api.create('base')).json;
      await api.patch(note.id, 1, { title: 'moved on' });
      const used = newKey();
      await api.create('first use', { key: used });
      const answer = await api.batch([
        batchItem('POST', '/api/notes', { body: { title: 'fresh' } }),
        batchItem('PATCH', `/api/notes/${note.id}`, { body: { title: 'stale' }, ifMatch: 1 }),
        batchItem('POST', '/api/notes', { body: { title: 'other bytes' }, key: used }),
        batchItem('POST', '/api/notes', { body: { title: 'no key' }, key: null }),
        batchItem('POST', '/api/notes', { body: { title: '' } }),
      ]);
      const [created, conflict, reused, keyless, invalid] = items(answer);
      expect(created).toMatchObject({
        status: 201,
        headers: { etag: '"1"', 'content-type': 'application/json; charset=utf-8' },
      });
      expect(body(created!)).toMatchObject({ revision: 1, title: 'fresh', body: '' });
      expect(conflict).toMatchObject({ status: 412, headers: { etag: '"2"' } });
      expect(conflict!.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(body(conflict!)).toMatchObject({ type: 'revision-conflict', currentRevision: 2 });
      expect([reused!.status, body(reused!).type]).toEqual([422, 'idempotency-key-reused']);
      expect([keyless!.status, body(keyless!).type]).toEqual([400, 'idempotency-key-missing']);
      expect([invalid!.status, body(invalid!).type]).toEqual([422, 'validation-failed']);
      for (const item of [created, conflict, reused, keyless, invalid]) {
        expect(item!.headers['idempotent-replayed']).toBeUndefined();
      }
      const titles = (await api.get('/api/notes')).json.items.map(
        (n: { title: string }) => n.title,
      );
      expect(titles).toEqual(['moved on', 'first use', 'fresh']);
    });

    it('answers a replayed batch from the ledger: the same bytes, Idempotent-Replayed per item', async () => {
      const user = newUser();
      const api = await login(user);
      const note = (await api.create('to change')).json;
      const gone = (await api.create('to delete')).json;
      const batch = [
        batchItem('POST', '/api/notes', { body: { title: 'a' } }),
        batchItem('POST', '/api/notes', { body: { title: 'b', body: 'text' }, digest: false }),
        batchItem('PATCH', `/api/notes/${note.id}`, { body: { body: 'changed' }, ifMatch: 1 }),
        batchItem('DELETE', `/api/notes/${gone.id}`, { ifMatch: 1 }),
      ];
      const first = items(await api.batch(batch));
      const again = items(await api.batch(batch));
      expect(first.map((item) => item.status)).toEqual([201, 201, 200, 200]);
      for (const [index, item] of again.entries()) {
        expect(item.status).toBe(first[index]!.status);
        expect(item.body).toBe(first[index]!.body);
        expect(item.headers.etag).toBe(first[index]!.headers.etag);
        expect(item.headers['idempotent-replayed']).toBe('true');
        expect(first[index]!.headers['idempotent-replayed']).toBeUndefined();
      }
      const stats = await api.stats(user);
      expect(stats.store).toMatchObject({ notes: 3, deleted: 1, revisionSum: 6, receipts: 6 });
      expect(stats.process).toMatchObject({ replays: 4, batches: 2 });
    });

    it('applies 30 concurrent copies of one batch once per key; the rest replay or get 409', async () => {
      const user = newUser('storm');
      const api = await login(user);
      const batch = Array.from({ length: 5 }, (_, i) =>
        batchItem('POST', '/api/notes', { body: { title: `storm ${i}` } }),
      );
      const answers = await Promise.all(Array.from({ length: 30 }, () => api.batch(batch)));
      const copies = answers.map(items);
      for (const index of batch.keys()) {
        const answered = copies.map((copy) => copy[index]!);
        expect(answered.every((item) => item.status === 201 || item.status === 409)).toBe(true);
        const fresh = answered.filter(
          (item) => item.status === 201 && item.headers['idempotent-replayed'] !== 'true',
        );
        expect(fresh).toHaveLength(1);
        for (const item of answered.filter((a) => a.status === 201)) {
          expect(item.body).toBe(fresh[0]!.body);
        }
        for (const item of answered.filter((a) => a.status === 409)) {
          expect([body(item).type, item.headers['retry-after']]).toEqual([
            'request-in-progress',
            '1',
          ]);
        }
      }
      const stats = await api.stats(user);
      expect(stats.store).toMatchObject({ notes: 5, revisionSum: 5, receipts: 5 });
      expect(Object.values(stats.process.effectsByKey)).toEqual([1, 1, 1, 1, 1]);
    });

    it('keeps one ledger entry for a key sent alone and then in a batch, or the reverse', async () => {
      const user = newUser();
      const api = await login(user);
      const aloneFirst = newKey();
      const single = await api.create('alone first', { key: aloneFirst });
      const batchedFirst = newKey();
      const [replayed, created] = items(
        await api.batch([
          batchItem('POST', '/api/notes', { body: { title: 'alone first' }, key: aloneFirst }),
          batchItem('POST', '/api/notes', { body: { title: 'batched first' }, key: batchedFirst }),
        ]),
      );
      expect(replayed).toMatchObject({
        status: 201,
        body: single.text,
        headers: { 'idempotent-replayed': 'true' },
      });
      const later = await api.create('batched first', { key: batchedFirst });
      expect([later.status, later.text, later.headers.get('idempotent-replayed')]).toEqual([
        201,
        created!.body,
        'true',
      ]);
      const withoutDigest = await api.create('batched first', { key: batchedFirst, digest: false });
      expect(withoutDigest.headers.get('idempotent-replayed')).toBe('true');
      const stats = await api.stats(user);
      expect(stats.store).toMatchObject({ notes: 2, receipts: 2 });
      expect(stats.process.effectsByKey).toEqual({ [aloneFirst]: 1, [batchedFirst]: 1 });
    });

    it('reads an item path as its request alone is read: dot segments resolved, one ledger entry', async () => {
      const user = newUser();
      const api = await login(user);
      const key = newKey();
      const [dotted] = items(
        await api.batch([batchItem('POST', '/api/./notes', { body: { title: 'dotted' }, key })]),
      );
      expect(dotted!.status, dotted!.body).toBe(201);
      // The same write alone (a URL resolves `/api/./notes` to `/api/notes`) replays it.
      const alone = await api.create('dotted', { key });
      expect([alone.status, alone.text, alone.headers.get('idempotent-replayed')]).toEqual([
        201,
        dotted!.body,
        'true',
      ]);
      const [parent] = items(
        await api.batch([batchItem('POST', '/api/x/../notes', { body: { title: 'dotted' }, key })]),
      );
      expect(parent).toMatchObject({ status: 201, body: dotted!.body });
      expect((await api.stats(user)).process.effectsByKey).toEqual({ [key]: 1 });
    });

    it('answers every malformed item exactly as its request alone: status, headers and bytes', async () => {
      const api = await login();
      const note = (await api.create('target')).json;
      await api.patch(note.id, 1, { title: 'now at 2' });
      const used = newKey();
      await api.create('used', { key: used });
      const cases: Array<[string, string, WriteOptions]> = [
        ['POST', '/api/notes', { key: null, body: { title: 'x' } }],
        ['POST', '/api/notes', { key: 'short', body: { title: 'x' } }],
        ['POST', '/api/notes', { body: { title: 'x' }, digest: 'sha-256=:abc:' }],
        [
          'POST',
          '/api/notes',
          {
            body: { title: 'x' },
            digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
          },
        ],
        ['POST', '/api/notes', { body: { title: 'other' }, key: used }],
        ['POST', '/api/notes', { body: { title: 'other' }, key: used, digest: false }],
        ['POST', '/api/notes', { body: { title: 1 } }],
        ['POST', '/api/notes', { body: { title: 'x', extra: true } }],
        ['POST', '/api/notes', { body: { title: 'a\u0000b' } }],
        ['POST', '/api/notes', { rawBody: '{"title":' }],
        ['POST', '/api/notes', { rawBody: '' }],
        ['POST', '/api/notes', { rawBody: JSON.stringify({ title: 'o'.repeat(70_000) }) }],
        ['POST', '/api/notes', { body: { title: 'x' }, headers: { 'content-type': 'text/plain' } }],
        ['PATCH', `/api/notes/${note.id}`, { body: { title: 'x' } }],
        ['PATCH', `/api/notes/${note.id}`, { body: { title: 'x' }, ifMatch: 'W/1' }],
        ['PATCH', `/api/notes/${note.id}`, { body: { title: 'x' }, ifMatch: 2_147_483_648 }],
        ['PATCH', `/api/notes/${note.id}`, { body: { title: 'x' }, ifMatch: 1 }],
        ['PATCH', `/api/notes/${note.id}`, { body: {}, ifMatch: 2 }],
        ['PATCH', '/api/notes/note-missing', { body: { title: 'x' }, ifMatch: 1 }],
        ['PATCH', '/api/notes/', { body: { title: 'x' }, ifMatch: 1 }],
        ['PATCH', '/api/notes/a%20b', { body: { title: 'x' }, ifMatch: 1 }],
        ['PATCH', '/api/notes/%zz', { body: { title: 'x' }, ifMatch: 1 }],
        ['PATCH', `/api/notes/${'k'.repeat(101)}`, { body: { title: 'x' }, ifMatch: 1 }],
        ['DELETE', `/api/notes/${note.id}`, { ifMatch: 9 }],
        ['DELETE', `/api/notes/${note.id}`, {}],
        ['PUT', `/api/notes/${note.id}`, { body: { title: 'x' }, ifMatch: 2 }],
        ['POST', '/api/notes/extra', { body: { title: 'x' } }],
        ['POST', '/API/NOTES', { body: { title: 'x' } }],
      ];
      // A case without a key of its own gets a fresh one for each send, so the two never meet.
      const keyed = (options: WriteOptions) =>
        options.key === undefined ? { ...options, key: newKey() } : options;
      const batched = items(
        await api.batch(
          cases.map(([method, path, options]) => batchItem(method, path, keyed(options))),
        ),
      );
      for (const [index, [method, path, options]] of cases.entries()) {
        const alone = await api.write(method, path, keyed(options));
        const item = batched[index]!;
        const label = `${method} ${path} ${JSON.stringify(options).slice(0, 120)}`;
        expect(item.status, label).toBe(alone.status);
        expect(item.status, label).toBeGreaterThanOrEqual(400);
        expect(item.body, label).toBe(alone.text);
        for (const name of ['content-type', 'etag', 'retry-after', 'idempotent-replayed']) {
          expect(item.headers[name], `${label}: ${name}`).toBe(
            alone.headers.get(name) ?? undefined,
          );
        }
      }
    });

    it('answers an item whose headers no HTTP request could carry with 400, as the parser answers one alone, and stores nothing for it', async () => {
      const api = await login();
      const refused: Record<string, string>[] = [
        { 'if-match': 'a\u0000b' },
        { 'x-note': 'one\r\ntwo' },
        { 'x-note': 'wide \u0100' },
        { 'bad name': 'x' },
      ];
      const keys = refused.map(() => newKey());
      const kept = newKey();
      const answers = items(
        await api.batch([
          ...refused.map((headers, i) =>
            batchItem('POST', '/api/notes', { key: keys[i]!, body: { title: 'x' }, headers }),
          ),
          batchItem('POST', '/api/notes', {
            key: kept,
            body: { title: 'kept' },
            headers: { 'x-note': 'tab\tand latin-1 \u00e9' },
          }),
        ]),
      );
      for (const [i, answer] of answers.slice(0, refused.length).entries()) {
        expect(answer.status, JSON.stringify(refused[i])).toBe(400);
        expect(body(answer)).toMatchObject({
          type: 'bad-request',
          detail: 'the request is not valid HTTP/1.1',
        });
      }
      expect(answers[refused.length]!.status).toBe(201);
      // Nothing was stored under a refused key: sent again as a request can carry it, it applies.
      const again = await api.create('x', { key: keys[0]! });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
    });

    it('answers a key repeated inside one batch like a copy in flight: 409, or 422 for other bytes', async () => {
      const api = await login();
      const key = newKey();
      const [first, copy, other] = items(
        await api.batch([
          batchItem('POST', '/api/notes', { body: { title: 'one' }, key }),
          batchItem('POST', '/api/notes', { body: { title: 'one' }, key }),
          batchItem('POST', '/api/notes', { body: { title: 'two' }, key }),
        ]),
      );
      expect(first!.status).toBe(201);
      expect([copy!.status, body(copy!).type]).toEqual([409, 'request-in-progress']);
      expect([other!.status, body(other!).type]).toEqual([422, 'idempotency-key-reused']);
      expect((await api.get('/api/notes')).json.items).toHaveLength(1);
    });

    it('answers 401 for the whole batch before any item runs, and stores nothing', async () => {
      const api = await login();
      const key = newKey();
      const item = batchItem('POST', '/api/notes', { body: { title: 'x' }, key });
      for (const token of ['', 'not-a-token']) {
        const refused = await api.batch([item], { token });
        expect(refused.status).toBe(401);
        expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
        expect(refused.json.type).toBe('auth-required');
      }
      expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
      expect(items(await api.batch([item]))[0]!.status).toBe(201);
    });

    it('answers 413 for more items or bytes than the endpoint takes, and 400 for an envelope that is none', async () => {
      const api = await login();
      const item = batchItem('POST', '/api/notes', { body: { title: 'x' } });
      const tooMany = await api.batch(Array.from({ length: 101 }, () => item));
      expect([tooMany.status, tooMany.json.type]).toEqual([413, 'body-too-large']);
      expect(tooMany.json.detail).toMatch(/100 items/);
      const big = batchItem('POST', '/api/notes', { rawBody: 'x'.repeat(60_000) });
      const tooBig = await api.batch(Array.from({ length: 20 }, () => big));
      expect([tooBig.status, tooBig.json.type]).toEqual([413, 'body-too-large']);
      for (const envelope of [
        '[]',
        '{}',
        '{"items":{}}',
        '{"items":[{"method":"POST"}]}',
        '{"items":[{"method":"POST","path":"/api/notes","headers":{},"body":{}}]}',
      ]) {
        const refused = await send(
          getServer().url,
          'POST',
          '/sync/batch',
          {
            authorization: `Bearer ${api.token}`,
            'content-type': 'application/json',
          },
          envelope,
        );
        expect([refused.status, refused.json.type], envelope).toEqual([400, 'batch-malformed']);
      }
      const notJson = await send(
        getServer().url,
        'POST',
        '/sync/batch',
        {
          authorization: `Bearer ${api.token}`,
          'content-type': 'application/json',
        },
        '{"items":[',
      );
      expect([notJson.status, notJson.json.type]).toEqual([400, 'malformed-body']);
      const text = await send(
        getServer().url,
        'POST',
        '/sync/batch',
        {
          authorization: `Bearer ${api.token}`,
          'content-type': 'text/plain',
        },
        '{"items":[]}',
      );
      expect([text.status, text.json.type]).toEqual([415, 'unsupported-media-type']);
      expect(items(await api.batch([]))).toEqual([]);
      expect((await api.get('/api/notes')).json.items).toEqual([]);
    });

    it('answers 503 for the whole batch when storage fails every write, and stores nothing', async () => {
      const api = await login();
      const store = getStore();
      const realTransact = store.ledger.transact;
      store.ledger.transact = async () => {
        throw new StoreUnavailableError('busy');
      };
      const key = newKey();
      try {
        const refused = await api.batch([
          batchItem('POST', '/api/notes', { body: { title: 'x' }, key }),
        ]);
        expect([refused.status, refused.json.type, refused.headers.get('retry-after')]).toEqual([
          503,
          'service-unavailable',
          '1',
        ]);
      } finally {
        store.ledger.transact = realTransact;
      }
      expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
      expect(
        items(await api.batch([batchItem('POST', '/api/notes', { body: { title: 'x' }, key })]))[0]!
          .status,
      ).toBe(201);
    });

    it('answers one failed write with its own 500 or 503 and keeps the others', async () => {
      const api = await login();
      const store = getStore();
      const realTransact = store.ledger.transact;
      // Each write on its own, where the failures are injected.
      const realTransactMany = store.ledger.transactMany;
      store.ledger.transactMany = undefined;
      const broken = newKey();
      const busy = newKey();
      store.ledger.transact = async (claim, work) => {
        if (claim.key === broken) throw new Error('disk on fire');
        if (claim.key === busy) throw new StoreUnavailableError('busy');
        return realTransact(claim, work);
      };
      try {
        const answered = items(
          await api.batch([
            batchItem('POST', '/api/notes', { body: { title: 'a' } }),
            batchItem('POST', '/api/notes', { body: { title: 'b' }, key: broken }),
            batchItem('POST', '/api/notes', { body: { title: 'c' }, key: busy }),
            batchItem('POST', '/api/notes', { body: { title: 'd' } }),
          ]),
        );
        expect(answered.map((item) => item.status)).toEqual([201, 500, 503, 201]);
        expect(body(answered[1]!).type).toBe('internal-error');
        expect(answered[2]!.headers['retry-after']).toBe('1');
      } finally {
        store.ledger.transact = realTransact;
        store.ledger.transactMany = realTransactMany;
      }
      expect((await api.get(`/idempotency/${broken}`)).status).toBe(404);
    });

    it('is subject to fault injection: a batch burst, an item burst, a lost batch answer, a held key', async () => {
      const user = newUser();
      const api = await login(user);
      await fault({
        kind: 'unavailable',
        route: 'POST /sync/batch',
        user,
        count: 1,
        retryAfter: 2,
      });
      const burst = await api.batch([batchItem('POST', '/api/notes', { body: { title: 'x' } })]);
      expect([burst.status, burst.json.type, burst.headers.get('retry-after')]).toEqual([
        503,
        'service-unavailable',
        '2',
      ]);

      await fault({
        kind: 'unavailable',
        route: 'PATCH /api/notes/:id',
        user,
        count: 1,
        status: 429,
      });
      const note = (await api.create('n')).json;
      const [patched, created] = items(
        await api.batch([
          batchItem('PATCH', `/api/notes/${note.id}`, { body: { title: 'y' }, ifMatch: 1 }),
          batchItem('POST', '/api/notes', { body: { title: 'z' } }),
        ]),
      );
      expect([patched!.status, body(patched!).type, patched!.headers['retry-after']]).toEqual([
        429,
        'too-many-requests',
        '1',
      ]);
      expect(created!.status).toBe(201);

      await fault({ kind: 'drop-after-commit', route: 'POST /api/notes', user, count: 1 });
      const lost = [
        batchItem('POST', '/api/notes', { body: { title: 'lost 1' } }),
        batchItem('POST', '/api/notes', { body: { title: 'lost 2' } }),
      ];
      await expect(api.batch(lost)).rejects.toThrow();
      const resent = items(await api.batch(lost));
      expect(resent.map((item) => [item.status, item.headers['idempotent-replayed']])).toEqual([
        [201, 'true'],
        [201, 'true'],
      ]);

      await fault({ kind: 'drop-after-commit', route: 'POST /sync/batch', user, count: 1 });
      const dropped = [batchItem('POST', '/api/notes', { body: { title: 'dropped' } })];
      await expect(api.batch(dropped)).rejects.toThrow();
      expect(items(await api.batch(dropped))[0]!.headers['idempotent-replayed']).toBe('true');

      await fault({ kind: 'delay', route: 'POST /sync/batch', user, count: 1, ms: 300 });
      const held = newKey();
      const slow = api.batch([
        batchItem('POST', '/api/notes', { body: { title: 'held' }, key: held }),
      ]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const copy = await api.create('held', { key: held });
      expect([copy.status, copy.json.type]).toEqual([409, 'request-in-progress']);
      expect(items(await slow)[0]!.status).toBe(201);
      const stats = await api.stats(user);
      expect(stats.store.notes).toBe(6);
      expect(Object.values(stats.process.effectsByKey).every((n) => n === 1)).toBe(true);
    });

    it('advertises itself with a Link on API answers and on OPTIONS', async () => {
      const api = await login();
      const listed = await api.get('/api/notes');
      const endpoint = parseBatchLink(
        listed.headers.get('link') ?? undefined,
        `${getServer().url}/api/notes`,
      );
      expect(endpoint).toEqual({
        url: `${getServer().url}/sync/batch`,
        maxItems: 100,
        maxBytes: 1_048_576,
      });
      expect((await api.create('x')).headers.get('link')).toContain(BATCH_LINK_REL);
      const probe = await send(getServer().url, 'OPTIONS', '/sync/batch', {});
      expect(probe.status).toBe(204);
      expect(probe.headers.get('allow')).toBe('POST, OPTIONS');
      expect(parseBatchLink(probe.headers.get('link') ?? undefined, getServer().url)?.url).toBe(
        `${getServer().url}/sync/batch`,
      );
    });

    describe('on a server without batches', () => {
      let plain: RunningServer;
      beforeAll(async () => {
        plain = await startTestServer({ store: getStore(), batch: false });
      });
      afterAll(async () => {
        await plain?.close();
      });

      it('answers 404, which clients take as "no batches", and advertises nothing', async () => {
        const api = await Api.login(plain.url, newUser());
        const key = newKey();
        const answer = await api.batch([
          batchItem('POST', '/api/notes', { body: { title: 'x' }, key }),
        ]);
        expect([answer.status, answer.json.type]).toEqual([404, 'not-found']);
        expect((await send(plain.url, 'OPTIONS', '/sync/batch', {})).status).toBe(404);
        expect((await api.get('/api/notes')).headers.get('link')).toBeNull();
        expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
      });
    });
  });
}
