import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OutboxKitOptions, RETENTION_HEADER, startSweeper } from '../../server/kit/index.ts';
import type { BatchItem } from '../../shared/wire/batch.ts';
import { PROBLEM, PROBLEM_CONTENT_TYPE } from '../../shared/wire/protocol.ts';
import { batchItem, digestOf, newKey, newUser, type WriteOptions } from './helpers.ts';
import type { TodoApp } from './kit-todo-app.ts';

/**
 * The kit's conformance suite (SPEC §15, §15.1, §22.1), run on every ledger store against the
 * todo app of kit-todo-app.ts, through the kit's Fetch API entry (`kit.fetch(request)`), which
 * every adapter hands its requests to. "Exactly one effect" is counted in the app's own table.
 */

/** What a test reads of an answer. */
export interface KitAnswer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON members
  json: any;
}

/** Sends one request to a kit app; `options` as the reference server's tests write them. */
export async function call(
  app: TodoApp<unknown>,
  method: string,
  path: string,
  options: WriteOptions & { user?: string | null; raw?: RequestInit } = {},
): Promise<KitAnswer> {
  const item = batchItem(method, path, options);
  const headers = new Headers(item.headers);
  if (options.user !== null) headers.set('authorization', `Bearer ${options.user ?? 'alice'}`);
  const init: RequestInit = { method, headers, body: item.body, ...options.raw };
  return read(await app.kit.fetch(new Request(`http://kit.test${path}`, init)));
}

async function read(response: Response): Promise<KitAnswer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Sends a batch (SPEC §15.1) to a kit app. */
export async function callBatch(
  app: TodoApp<unknown>,
  items: readonly BatchItem[],
  user: string | null,
): Promise<KitAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (user !== null) headers.authorization = `Bearer ${user}`;
  const request = new Request('http://kit.test/sync/batch', {
    method: 'POST',
    headers,
    body: JSON.stringify({ items }),
  });
  return read(await app.kit.fetch(request));
}

/** Kit options a test opens an app of its own with. */
export type KitAppOptions = Partial<Omit<OutboxKitOptions<unknown>, 'ledger' | 'authenticate'>>;

/**
 * Defines the suite for one store; `open` makes a fresh app (on the same database, with `options`
 * given to its kit), `cleanup` runs after it closed.
 */
export function defineKitConformance(
  name: string,
  open: (options?: KitAppOptions) => Promise<TodoApp<unknown>>,
  cleanup: () => Promise<void> = async () => {},
): void {
  describe(`the kit on ${name}`, () => {
    let app: TodoApp<unknown>;
    beforeAll(async () => {
      app = await open();
    });
    afterAll(async () => {
      await app?.close();
      await cleanup();
    });

    const create = (user: string, title: string, options: WriteOptions = {}) =>
      call(app, 'POST', '/api/todos', { user, body: { title }, ...options });

    it('creates once and replays the stored answer byte for byte, with Idempotent-Replayed', async () => {
      const user = newUser();
      const key = newKey('todo');
      const first = await create(user, 'milk', { key });
      expect(first.status).toBe(201);
      expect(first.headers.get('etag')).toBe('"1"');
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      expect(first.json).toMatchObject({ revision: 1, title: 'milk', done: false });
      for (const digest of [true, false]) {
        const again = await create(user, 'milk', { key, digest });
        expect(again.status).toBe(201);
        expect(again.text).toBe(first.text);
        expect(again.headers.get('etag')).toBe('"1"');
        expect(again.headers.get('idempotent-replayed')).toBe('true');
      }
      expect(await app.countTodos(user)).toBe(1);
    });

    it('answers a replay before reading the body when Content-Digest matches', async () => {
      const user = newUser();
      const key = newKey('todo');
      const body = JSON.stringify({ title: 'eggs' });
      await create(user, 'eggs', { key });
      let pulled = false;
      // No high-water mark: the stream is pulled only when someone reads it.
      const stream = new ReadableStream<Uint8Array>(
        {
          pull() {
            pulled = true;
            throw new Error('the body must not be read');
          },
        },
        { highWaterMark: 0 },
      );
      const answer = await call(app, 'POST', '/api/todos', {
        user,
        key,
        rawBody: body,
        raw: { body: stream, duplex: 'half' } as RequestInit,
      });
      expect(answer.status).toBe(201);
      expect(answer.headers.get('idempotent-replayed')).toBe('true');
      expect(pulled).toBe(false);
    });

    it('refuses a key reused with other bytes (422), with or without Content-Digest', async () => {
      const user = newUser();
      const key = newKey('todo');
      await create(user, 'bread', { key });
      for (const digest of [true, false]) {
        const reused = await create(user, 'butter', { key, digest });
        expect(reused.status).toBe(422);
        expect(reused.json.type).toBe(PROBLEM.keyReused);
      }
      const otherPath = await call(app, 'PATCH', '/api/todos/x', {
        user,
        key,
        body: { done: true },
        ifMatch: 1,
      });
      expect(otherPath.json.type).toBe(PROBLEM.keyReused);
      expect(await app.countTodos(user)).toBe(1);
    });

    it.each([
      ['no key', { key: null }, 400, PROBLEM.keyMissing],
      ['a malformed key', { headers: { 'idempotency-key': '"short"' } }, 400, PROBLEM.keyMalformed],
      [
        'a key with a parameter',
        { headers: { 'idempotency-key': '"todo-0123456789";a=1' } },
        400,
        PROBLEM.keyMalformed,
      ],
      ['a malformed Content-Digest', { digest: 'sha-256=:nope:' }, 400, PROBLEM.digestMismatch],
      [
        'a Content-Digest of other bytes',
        { digest: digestOf('{"title":"other"}') },
        400,
        PROBLEM.digestMismatch,
      ],
      [
        'a body that is not JSON',
        { rawBody: '{"title":', digest: false },
        400,
        PROBLEM.malformedBody,
      ],
      [
        'a body of another media type',
        { rawBody: 'title=x', headers: { 'content-type': 'text/plain' } },
        415,
        PROBLEM.unsupportedMediaType,
      ],
      ['a body over the limit', { body: { title: 'o'.repeat(70_000) } }, 413, PROBLEM.bodyTooLarge],
      ['an invalid todo', { body: { title: '' } }, 422, PROBLEM.validationFailed],
      ['a title with NUL', { body: { title: 'a\u0000b' } }, 422, PROBLEM.validationFailed],
      [
        'a title with a lone surrogate',
        { rawBody: '{"title":"x\\udfffy"}' },
        422,
        PROBLEM.validationFailed,
      ],
    ] as const)(
      'answers a create with %s with a problem and stores nothing',
      async (_case, options, status, type) => {
        const user = newUser();
        const answer = await create(user, 'ok', options as WriteOptions);
        expect(answer.status).toBe(status);
        expect(answer.headers.get('content-type')).toContain(PROBLEM_CONTENT_TYPE);
        expect(answer.json.type).toBe(type);
        expect(await app.countTodos(user)).toBe(0);
        expect(await app.countLedger(user)).toBe(0);
      },
    );

    it('answers 401 with WWW-Authenticate before the ledger, even for a completed key', async () => {
      const key = newKey('todo');
      const user = newUser();
      await create(user, 'tea', { key });
      for (const token of [null, 'expired']) {
        const answer = await call(app, 'POST', '/api/todos', {
          user: token,
          key,
          body: { title: 'tea' },
        });
        expect(answer.status).toBe(401);
        expect(answer.headers.get('www-authenticate')).toBe('Bearer');
        expect(answer.json.type).toBe(PROBLEM.authRequired);
      }
    });

    it('leaves nothing behind when the handler throws: no effect, no ledger entry, no cached 500', async () => {
      const user = newUser();
      const key = newKey('todo');
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await create(user, 'explode', { key });
        expect(answer.status).toBe(500);
        expect(answer.json.type).toBe(PROBLEM.internal);
        expect(answer.headers.get('idempotent-replayed')).toBeNull();
      }
      expect(await app.countTodos(user)).toBe(0);
      expect(await app.countLedger(user)).toBe(0);
    });

    it('answers a copy of a key in progress with 409 and Retry-After, then replays it', async () => {
      const user = newUser();
      const key = newKey('todo');
      const first = create(user, 'slow:300', { key });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const copy = await create(user, 'slow:300', { key });
      expect(copy.status).toBe(409);
      expect(copy.json.type).toBe(PROBLEM.inProgress);
      expect(copy.headers.get('retry-after')).toBe('1');
      expect((await first).status).toBe(201);
      expect((await create(user, 'slow:300', { key })).headers.get('idempotent-replayed')).toBe(
        'true',
      );
      expect(await app.countTodos(user)).toBe(1);
    });

    it('keeps revisions: If-Match required, a stale one is 412 with currentRevision and history', async () => {
      const user = newUser();
      const created = await create(user, 'plan');
      const id = created.json.id as string;
      const path = `/api/todos/${id}`;
      const missing = await call(app, 'PATCH', path, { user, body: { done: true } });
      expect([missing.status, missing.json.type]).toEqual([428, PROBLEM.preconditionRequired]);
      const malformed = await call(app, 'PATCH', path, {
        user,
        body: { done: true },
        ifMatch: 'W/x',
      });
      expect([malformed.status, malformed.json.type]).toEqual([400, PROBLEM.ifMatchMalformed]);
      const updated = await call(app, 'PATCH', path, { user, body: { done: true }, ifMatch: 1 });
      expect(updated.status).toBe(200);
      expect(updated.headers.get('etag')).toBe('"2"');
      const key = newKey('todo');
      const stale = await call(app, 'PATCH', path, { user, key, body: { title: 'x' }, ifMatch: 1 });
      expect(stale.status).toBe(412);
      expect(stale.headers.get('etag')).toBe('"2"');
      expect(stale.json).toMatchObject({
        type: PROBLEM.revisionConflict,
        currentRevision: 2,
        history: { revision: 2, href: `/api/todos/${id}/history/2` },
      });
      // Nothing was stored for the 412: the same key at the current revision goes through.
      const retried = await call(app, 'PATCH', path, {
        user,
        key,
        body: { title: 'x' },
        ifMatch: 2,
      });
      expect(retried.status).toBe(200);
      const removed = await call(app, 'DELETE', path, { user, ifMatch: 3 });
      expect([removed.status, removed.json]).toEqual([200, { id, revision: 4, deleted: true }]);
      const gone = await call(app, 'DELETE', path, { user, ifMatch: 4 });
      expect([gone.status, gone.json.type]).toEqual([404, PROBLEM.notFound]);
    });

    it('looks up receipts per principal and publishes its retention on every answer', async () => {
      const user = newUser();
      const key = newKey('todo');
      const created = await create(user, 'soap', { key });
      expect(created.headers.get(RETENTION_HEADER)).toBe(String(7 * 24 * 60 * 60));
      expect(created.headers.get('link')).toContain('rel="urn:sw-outbox:batch"');
      const receipt = await call(app, 'GET', `/idempotency/${key}`, { user, key: null });
      expect(receipt.status).toBe(200);
      expect(receipt.json).toEqual({ status: 201, body: created.json });
      const stranger = await call(app, 'GET', `/idempotency/${key}`, {
        user: newUser(),
        key: null,
      });
      expect(stranger.status).toBe(404);
      const unknown = await call(app, 'GET', `/idempotency/${newKey('todo')}`, { user, key: null });
      expect([unknown.status, unknown.json.type]).toEqual([404, PROBLEM.notFound]);
      const anonymous = await call(app, 'GET', `/idempotency/${key}`, { user: null, key: null });
      expect(anonymous.status).toBe(401);
      const retention = await call(app, 'GET', '/idempotency', { user: null, key: null });
      expect(retention.json.retentionSeconds).toBe(7 * 24 * 60 * 60);
      expect(retention.headers.get(RETENTION_HEADER)).toBe(String(7 * 24 * 60 * 60));
    });

    it('lets 50 concurrent copies of one key make exactly one todo', async () => {
      const user = newUser();
      const key = newKey('todo');
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => create(user, 'storm', { key })),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
      const created = answers.filter((answer) => answer.status === 201);
      expect(new Set(created.map((answer) => answer.text)).size).toBe(1);
      expect(created.filter((a) => a.headers.get('idempotent-replayed') === null).length).toBe(1);
      expect(await app.countTodos(user)).toBe(1);
      expect(await app.countLedger(user)).toBe(1);
    });

    it('keeps and replays a write whose clock reads a fraction of a millisecond, as every store does', async () => {
      const fractional = await open({ now: () => 1_767_225_600_000.5 });
      try {
        const user = newUser();
        const key = newKey('todo');
        const body = { title: 'tick' };
        const first = await call(fractional, 'POST', '/api/todos', { user, key, body });
        expect(first.status).toBe(201);
        const again = await call(fractional, 'POST', '/api/todos', { user, key, body });
        expect([again.status, again.text]).toEqual([201, first.text]);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        expect(await fractional.countTodos(user)).toBe(1);
      } finally {
        await fractional.close();
      }
    });

    it('sweeps ledger entries past the retention, after which the key is unknown', async () => {
      const user = newUser();
      const key = newKey('todo');
      await create(user, 'old', { key });
      const swept = startSweeper({
        store: app.kit.ledger,
        retentionMs: -60_000,
        batchSize: 2,
      });
      try {
        expect(await swept.sweep()).toBeGreaterThanOrEqual(1);
      } finally {
        swept.stop();
      }
      expect(await app.countLedger(user)).toBe(0);
      const receipt = await call(app, 'GET', `/idempotency/${key}`, { user, key: null });
      expect(receipt.status).toBe(404);
    });

    it('sweeps with a cutoff between two milliseconds, as every store does', async () => {
      const user = newUser();
      await create(user, 'older');
      const swept = startSweeper({ store: app.kit.ledger, retentionMs: -60_000.5 });
      try {
        expect(await swept.sweep()).toBeGreaterThanOrEqual(1);
      } finally {
        swept.stop();
      }
      expect(await app.countLedger(user)).toBe(0);
    });

    describe('batches (SPEC §15.1)', () => {
      it('answers a mixed batch item by item, each as its request alone', async () => {
        const user = newUser();
        const plan = await create(user, 'plan');
        const reusedKey = newKey('todo');
        await create(user, 'first', { key: reusedKey });
        const items = [
          batchItem('POST', '/api/todos', { body: { title: 'a' } }),
          batchItem('PATCH', `/api/todos/${plan.json.id}`, { body: { done: true }, ifMatch: 7 }),
          batchItem('POST', '/api/todos', { key: reusedKey, body: { title: 'other' } }),
          batchItem('POST', '/api/todos', { key: null, body: { title: 'b' } }),
          batchItem('POST', '/api/todos', { body: { title: '' } }),
          batchItem('POST', '/api/nothing', { body: { title: 'c' } }),
          batchItem('POST', '/api/todos', { body: { title: 'explode' } }),
        ];
        const answer = await callBatch(app, items, user);
        expect(answer.status).toBe(200);
        const results = answer.json.items as Array<{ status: number; body: string }>;
        expect(results.map((item) => item.status)).toEqual([201, 412, 422, 400, 422, 404, 500]);
        expect(JSON.parse(results[1]!.body)).toMatchObject({ currentRevision: 1 });
        expect(await app.countTodos(user)).toBe(3);
      });

      it('replays item by item, and answers a key first sent alone from the ledger', async () => {
        const user = newUser();
        const alone = newKey('todo');
        const single = await create(user, 'alone', { key: alone });
        const items = [
          batchItem('POST', '/api/todos', { key: alone, body: { title: 'alone' } }),
          batchItem('POST', '/api/todos', { body: { title: 'batched' } }),
        ];
        const first = await callBatch(app, items, user);
        expect(first.json.items[0]).toMatchObject({ status: 201, body: single.text });
        expect(first.json.items[0].headers['idempotent-replayed']).toBe('true');
        expect(first.json.items[1].headers['idempotent-replayed']).toBeUndefined();
        const again = await callBatch(app, items, user);
        expect(again.json.items.map((item: { body: string }) => item.body)).toEqual(
          first.json.items.map((item: { body: string }) => item.body),
        );
        expect(again.json.items[1].headers['idempotent-replayed']).toBe('true');
        expect(await app.countTodos(user)).toBe(2);
      });

      it('answers for the whole batch: 401 before the ledger, 413 too many items, 400 malformed', async () => {
        const user = newUser();
        const item = batchItem('POST', '/api/todos', { body: { title: 'x' } });
        const unauthorised = await callBatch(app, [item], null);
        expect([unauthorised.status, unauthorised.headers.get('www-authenticate')]).toEqual([
          401,
          'Bearer',
        ]);
        const tooMany = await callBatch(
          app,
          Array.from({ length: 51 }, () => item),
          user,
        );
        expect([tooMany.status, tooMany.json.type]).toEqual([413, PROBLEM.bodyTooLarge]);
        const request = new Request('http://kit.test/sync/batch', {
          method: 'POST',
          headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
          body: '{"items":{}}',
        });
        const malformed = await read(await app.kit.fetch(request));
        expect([malformed.status, malformed.json.type]).toEqual([400, PROBLEM.batchMalformed]);
        expect(await app.countTodos(user)).toBe(0);
      });

      it('lets racing copies of one batch write each key exactly once', async () => {
        const user = newUser();
        const items = Array.from({ length: 5 }, (_, i) =>
          batchItem('POST', '/api/todos', { body: { title: `t${i}` } }),
        );
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => callBatch(app, items, user)),
        );
        for (const answer of answers) {
          expect(answer.status).toBe(200);
          for (const item of answer.json.items) expect([201, 409]).toContain(item.status);
        }
        expect(await app.countTodos(user)).toBe(5);
      });
    });
  });
}
