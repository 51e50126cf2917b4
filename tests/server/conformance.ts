import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer, ServerStore } from '../../server/index.ts';
import { defineBatchConformance } from './batch-conformance.ts';
import { Api, newKey, newUser, startTestServer } from './helpers.ts';
import { defineHistoryConformance, type FailLedgerInsert } from './history-conformance.ts';
import { defineInputConformance } from './input-conformance.ts';
import { defineStoreConformance } from './store-conformance.ts';

/** How a suite gets a fresh store, and how it cleans up after it. */
export interface StoreFactory {
  open(): Promise<ServerStore>;
  cleanup?(): Promise<void>;
  /** Makes one key's ledger insert fail inside its transaction (a trigger), for atomicity tests. */
  failLedgerInsert?: FailLedgerInsert;
}

/**
 * The one conformance suite of the reference server (SPEC §15, issue 3), run against every
 * storage adapter: the HTTP contract over a real socket, then the port itself.
 */
export function defineServerConformance(name: string, factory: StoreFactory): void {
  describe(`reference server on ${name}`, () => {
    let server: RunningServer;
    let store: ServerStore;

    beforeAll(async () => {
      store = await factory.open();
      server = await startTestServer({ store });
    });
    afterAll(async () => {
      await server?.close();
      await store?.close();
      await factory.cleanup?.();
    });

    const login = (user = newUser()) => Api.login(server.url, user);

    it('creates a note: 201, ETag "1" and { id, revision: 1, title, body }', async () => {
      const api = await login();
      const answer = await api.create('first');
      expect(answer.status).toBe(201);
      expect(answer.headers.get('etag')).toBe('"1"');
      expect(answer.json).toEqual({
        id: expect.stringMatching(/^note-[0-9a-f]{24}$/),
        revision: 1,
        title: 'first',
        body: '',
      });
      const fetched = await api.get(`/api/notes/${answer.json.id}`);
      expect(fetched.json).toEqual(answer.json);
      expect((await api.get('/api/notes')).json.items).toEqual([answer.json]);
    });

    it('replays a completed key with the identical status and body plus Idempotent-Replayed', async () => {
      const api = await login();
      const key = newKey();
      const first = await api.create('plate', { key });
      const again = await api.create('plate', { key });
      const withoutDigest = await api.create('plate', { key, digest: false });
      for (const replay of [again, withoutDigest]) {
        expect(replay.status).toBe(first.status);
        expect(replay.text).toBe(first.text);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        expect(replay.headers.get('etag')).toBe('"1"');
      }
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      expect((await api.get('/api/notes')).json.items).toHaveLength(1);
    });

    it('answers 422 idempotency-key-reused for the same key with another body, route or If-Match', async () => {
      const api = await login();
      const key = newKey();
      const created = await api.create('plate', { key });
      const otherBody = await api.create('another plate', { key });
      const otherBodyNoDigest = await api.create('another plate', { key, digest: false });
      const otherRoute = await api.patch(created.json.id, 1, { title: 'plate' }, { key });
      for (const answer of [otherBody, otherBodyNoDigest, otherRoute]) {
        expect(answer.status).toBe(422);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.json.type).toBe('idempotency-key-reused');
      }
      const patchKey = newKey();
      await api.patch(created.json.id, 1, { body: 'x' }, { key: patchKey });
      const otherIfMatch = await api.patch(created.json.id, 2, { body: 'x' }, { key: patchKey });
      expect(otherIfMatch.json.type).toBe('idempotency-key-reused');
      expect((await api.get(`/api/notes/${created.json.id}`)).json.revision).toBe(2);
    });

    it('applies 60 concurrent copies of one create exactly once; the rest replay or get 409', async () => {
      const user = newUser('storm');
      const api = await login(user);
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 60 }, () => api.create('one plate', { key })),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.every((status) => status === 201 || status === 409)).toBe(true);
      const fresh = answers.filter(
        (a) => a.status === 201 && a.headers.get('idempotent-replayed') !== 'true',
      );
      expect(fresh).toHaveLength(1);
      for (const answer of answers.filter((a) => a.status === 201))
        expect(answer.text).toBe(fresh[0]!.text);
      for (const answer of answers.filter((a) => a.status === 409)) {
        expect(answer.json.type).toBe('request-in-progress');
        expect(answer.headers.get('retry-after')).toBe('1');
      }
      expect((await api.get('/api/notes')).json.items).toHaveLength(1);
      const stats = await api.stats(user);
      expect(stats.store).toMatchObject({ notes: 1, revisionSum: 1, receipts: 1 });
      expect(stats.process.effectsByKey).toEqual({ [key]: 1 });
    });

    it('applies 60 concurrent copies of one update exactly once', async () => {
      const api = await login();
      const created = await api.create('counter');
      const key = newKey();
      const answers = await Promise.all(
        Array.from({ length: 60 }, () =>
          api.patch(created.json.id, 1, { body: 'ate one' }, { key }),
        ),
      );
      expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
      expect(
        answers.filter((a) => a.status === 200 && !a.headers.get('idempotent-replayed')),
      ).toHaveLength(1);
      expect((await api.get(`/api/notes/${created.json.id}`)).json).toMatchObject({
        revision: 2,
        body: 'ate one',
      });
    });

    it('answers a stale If-Match with 412, currentRevision, ETag and the server copy, and writes nothing', async () => {
      const api = await login();
      const created = await api.create('draft');
      await api.patch(created.json.id, 1, { title: 'second' });
      const key = newKey();
      const stale = await api.patch(created.json.id, 1, { title: 'lost' }, { key });
      expect(stale.status).toBe(412);
      expect(stale.headers.get('etag')).toBe('"2"');
      expect(stale.json).toMatchObject({
        type: 'revision-conflict',
        currentRevision: 2,
        current: { id: created.json.id, revision: 2, title: 'second', body: '' },
      });
      expect((await api.get(`/api/notes/${created.json.id}`)).json).toMatchObject({
        revision: 2,
        title: 'second',
      });
      expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
    });

    it('stores nothing for a write the store rejects, so the same key succeeds later', async () => {
      const user = newUser();
      const api = await login(user);
      const key = newKey();
      // The note write throws inside the ledger's transaction, after the key's claim.
      const realApply = store.applyWrite;
      let failed = false;
      store.applyWrite = (tx, command) => {
        if (!failed && command.key === key) {
          failed = true;
          throw new Error('disk on fire');
        }
        return realApply(tx, command);
      };
      try {
        const broken = await api.create('plate', { key });
        expect(broken.status).toBe(500);
        expect(broken.json.type).toBe('internal-error');
        expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
        const retried = await api.create('plate', { key });
        expect(retried.status).toBe(201);
        expect(retried.headers.get('idempotent-replayed')).toBeNull();
      } finally {
        store.applyWrite = realApply;
      }
      expect((await api.stats(user)).store.notes).toBe(1);
    });

    it('never caches a 401: after logging in again the same key is applied, not replayed', async () => {
      const user = newUser();
      const api = await login(user);
      const key = newKey();
      await fetch(new URL('/__faults/expire-token', server.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user }),
      });
      const expired = await api.create('plate', { key });
      expect(expired.status).toBe(401);
      expect(expired.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(expired.json.type).toBe('token-expired');
      const noToken = await api.write('POST', '/api/notes', { body: { title: 'x' }, token: '' });
      expect(noToken.status).toBe(401);
      const again = await login(user);
      const applied = await again.create('plate', { key });
      expect(applied.status).toBe(201);
      expect(applied.headers.get('idempotent-replayed')).toBeNull();
    });

    it('looks up receipts for the caller only', async () => {
      const api = await login();
      const key = newKey();
      const created = await api.create('receipt', { key });
      const receipt = await api.get(`/idempotency/${key}`);
      expect(receipt.status).toBe(200);
      expect(receipt.json).toEqual({ status: 201, body: created.json });
      expect((await api.get(`/idempotency/${encodeURIComponent(`"${key}"`)}`)).json.status).toBe(
        201,
      );
      const stranger = await login();
      expect((await stranger.get(`/idempotency/${key}`)).status).toBe(404);
      expect((await stranger.get(`/api/notes/${created.json.id}`)).status).toBe(404);
      expect((await api.get(`/idempotency/${newKey()}`)).status).toBe(404);
    });

    it('updates partially and deletes with If-Match, bumping the revision each time', async () => {
      const api = await login();
      const created = await api.create('title', { body: { title: 'title', body: 'body' } });
      const patched = await api.patch(created.json.id, 1, { body: 'new body' });
      expect(patched.status).toBe(200);
      expect(patched.headers.get('etag')).toBe('"2"');
      expect(patched.json).toEqual({
        id: created.json.id,
        revision: 2,
        title: 'title',
        body: 'new body',
      });
      expect(
        (await api.write('PATCH', `/api/notes/${created.json.id}`, { body: { title: 'y' } }))
          .status,
      ).toBe(428);
      const weak = await api.write('PATCH', `/api/notes/${created.json.id}`, {
        body: { title: 'y' },
        headers: { 'if-match': 'W/"2"' },
      });
      expect([weak.status, weak.json.type]).toEqual([400, 'if-match-malformed']);
      expect((await api.patch(created.json.id, 2, {})).status).toBe(422);
      const deleted = await api.remove(created.json.id, 2);
      expect(deleted.status).toBe(200);
      expect(deleted.json).toEqual({ id: created.json.id, revision: 3, deleted: true });
      expect((await api.get(`/api/notes/${created.json.id}`)).status).toBe(404);
      expect((await api.remove(created.json.id, 3)).status).toBe(404);
      expect((await api.patch('note-missing', 1, { title: 'x' })).status).toBe(404);
    });

    it('sends byte-identical JSON for awkward strings on every write path', async () => {
      const api = await login();
      const title = 'quote " backslash \\ slash / tab \t nl \n ctl \u0001\u001f é 漢 😀 \u2028';
      const created = await api.create(title);
      expect(created.text).toBe(
        JSON.stringify({ id: created.json.id, revision: 1, title, body: '' }),
      );
      const patched = await api.patch(created.json.id, 1, { body: title });
      expect(patched.text).toBe(
        JSON.stringify({ id: created.json.id, revision: 2, title, body: title }),
      );
    });

    defineInputConformance(() => server.url);
    defineBatchConformance(
      () => server,
      () => store,
    );
    defineStoreConformance(() => store);
    defineHistoryConformance(
      () => server.url,
      () => store,
      factory.failLedgerInsert,
    );
  });
}
