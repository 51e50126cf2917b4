import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildApp,
  ConfigError,
  openPostgresStore,
  openSqliteStore,
  parseServerArgs,
  type RunningServer,
  type ServerStore,
} from '../../server/index.ts';
import {
  Api,
  batchItem,
  dropSchema,
  newKey,
  newSchema,
  newUser,
  PG_SKIP_REASON,
  PG_URL,
  startTestServer,
} from './helpers.ts';

if (PG_SKIP_REASON) console.warn(`PostgreSQL collections suite skipped: ${PG_SKIP_REASON}`);

/**
 * Schemaless JSON collections of the reference server (`--collection todos`): any JSON object
 * per record, the kit's three checks, revisions by If-Match, problems for bad input — the same on
 * SQLite and PostgreSQL.
 */
function defineCollections(
  name: string,
  open: () => Promise<ServerStore>,
  cleanup?: () => Promise<void>,
) {
  describe(`collections on ${name}`, () => {
    let server: RunningServer;
    let store: ServerStore;
    beforeAll(async () => {
      store = await open();
      server = await startTestServer({ store, collections: ['todos', 'shopping-list'] });
    });
    afterAll(async () => {
      await server?.close();
      await store?.close();
      await cleanup?.();
    });
    const login = () => Api.login(server.url, newUser());

    it('creates, reads, lists, merges a patch into and deletes a record of any JSON shape', async () => {
      const api = await login();
      const todo = { text: 'milk', done: false, tags: ['shop'], meta: { by: 'me', due: null } };
      const created = await api.write('POST', '/api/todos', { body: todo });
      expect(created.status).toBe(201);
      expect(created.headers.get('etag')).toBe('"1"');
      expect(created.json).toEqual({
        id: expect.stringMatching(/^todos-[0-9a-f]{24}$/),
        revision: 1,
        ...todo,
      });
      const { id } = created.json;
      expect((await api.get(`/api/todos/${id}`)).json).toEqual(created.json);
      expect((await api.get(`/api/todos/${id}`)).headers.get('etag')).toBe('"1"');
      expect((await api.get('/api/todos')).json).toEqual({ items: [created.json] });

      const patched = await api.write('PATCH', `/api/todos/${id}`, {
        body: { done: true, tags: null, meta: { due: '2026-12-03' } },
        ifMatch: 1,
      });
      expect([patched.status, patched.headers.get('etag')]).toEqual([200, '"2"']);
      expect(patched.json).toEqual({
        id,
        revision: 2,
        text: 'milk',
        done: true,
        meta: { by: 'me', due: '2026-12-03' },
      });
      expect((await api.get(`/api/todos/${id}`)).text).toBe(patched.text);

      const removed = await api.write('DELETE', `/api/todos/${id}`, { ifMatch: 2 });
      expect([removed.status, removed.json]).toEqual([200, { id, revision: 3, deleted: true }]);
      expect((await api.get(`/api/todos/${id}`)).status).toBe(404);
      expect((await api.get('/api/todos')).json.items).toEqual([]);
    });

    it('keeps each collection and each principal apart', async () => {
      const [alice, bob] = [await login(), await login()];
      const milk = await alice.write('POST', '/api/todos', { body: { text: 'milk' } });
      await alice.write('POST', '/api/shopping-list', { body: { item: 'eggs' } });
      expect((await alice.get('/api/todos')).json.items).toEqual([milk.json]);
      expect((await alice.get('/api/shopping-list')).json.items).toHaveLength(1);
      expect((await bob.get('/api/todos')).json.items).toEqual([]);
      expect((await bob.get(`/api/todos/${milk.json.id}`)).status).toBe(404);
      const foreign = await bob.write('PATCH', `/api/todos/${milk.json.id}`, {
        body: { done: true },
        ifMatch: 1,
      });
      expect([foreign.status, foreign.json.type]).toEqual([404, 'not-found']);
      expect((await alice.get('/api/notes')).json.items).toEqual([]);
    });

    it('replays a key, refuses it with other bytes, and applies 20 racing copies once', async () => {
      const api = await login();
      const key = newKey('todos');
      const first = await api.write('POST', '/api/todos', { body: { text: 'once' }, key });
      const again = await api.write('POST', '/api/todos', { body: { text: 'once' }, key });
      expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([
        201,
        first.text,
        'true',
      ]);
      const other = await api.write('POST', '/api/todos', { body: { text: 'twice' }, key });
      expect([other.status, other.json.type]).toEqual([422, 'idempotency-key-reused']);
      const storm = newKey('todos');
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          api.write('POST', '/api/todos', { body: { text: 'storm' }, key: storm }),
        ),
      );
      expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
      expect(
        (await api.get('/api/todos')).json.items.map((item: { text: string }) => item.text),
      ).toEqual(['once', 'storm']);
    });

    it('answers a stale If-Match 412 with the current revision and copy, a missing one 428', async () => {
      const api = await login();
      const created = await api.write('POST', '/api/todos', { body: { text: 'a' } });
      const path = `/api/todos/${created.json.id}`;
      await api.write('PATCH', path, { body: { text: 'b' }, ifMatch: 1 });
      const stale = await api.write('PATCH', path, { body: { text: 'c' }, ifMatch: 1 });
      expect([stale.status, stale.headers.get('etag')]).toEqual([412, '"2"']);
      expect(stale.json).toMatchObject({
        type: 'revision-conflict',
        currentRevision: 2,
        current: { id: created.json.id, revision: 2, text: 'b' },
      });
      const staleDelete = await api.write('DELETE', path, { ifMatch: 1 });
      expect(staleDelete.status).toBe(412);
      const missing = await api.write('PATCH', path, { body: { text: 'c' } });
      expect([missing.status, missing.json.type]).toEqual([428, 'precondition-required']);
      expect((await api.get(path)).json.text).toBe('b');
    });

    it('answers bad input with problems: not an object, server members, too deep, too large, not JSON', async () => {
      const api = await login();
      const cases: Array<[Parameters<Api['write']>[2], number, string]> = [
        [{ body: ['a'] }, 422, 'validation-failed'],
        [{ body: 'text' }, 422, 'validation-failed'],
        [{ body: null }, 422, 'validation-failed'],
        [{ body: { id: 'mine', text: 'x' } }, 422, 'validation-failed'],
        [{ body: { revision: 3 } }, 422, 'validation-failed'],
        [{ body: JSON.parse(`${'{"a":'.repeat(40)}1${'}'.repeat(40)}`) }, 422, 'validation-failed'],
        [{ body: { text: 'x'.repeat(70 * 1024) } }, 413, 'body-too-large'],
        [{ rawBody: '{"text":' }, 400, 'malformed-body'],
        [
          { rawBody: '{"text":"x"}', headers: { 'content-type': 'text/plain' } },
          415,
          'unsupported-media-type',
        ],
        [{ body: { text: 'x' }, key: null }, 400, 'idempotency-key-missing'],
      ];
      for (const [options, status, type] of cases) {
        const answer = await api.write('POST', '/api/todos', options);
        expect([answer.status, answer.json?.type], JSON.stringify(options).slice(0, 80)).toEqual([
          status,
          type,
        ]);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
      const badId = await api.write('PATCH', `/api/todos/${'x'.repeat(81)}`, {
        body: {},
        ifMatch: 1,
      });
      expect(badId.status).toBe(422);
      const unknown = await api.write('POST', '/api/unknown', { body: { text: 'x' } });
      expect([unknown.status, unknown.json.type]).toEqual([404, 'not-found']);
      // NUL and lone surrogates are kept as JSON escapes: stored and answered alike everywhere.
      const odd = await api.write('POST', '/api/todos', { rawBody: '{"text":"a\\u0000b\\ud800"}' });
      expect(odd.status).toBe(201);
      expect((await api.get(`/api/todos/${odd.json.id}`)).text).toBe(odd.text);
      expect((await api.get('/api/todos')).json.items).toHaveLength(1);
    });

    it('takes records in batches item by item, as requests alone', async () => {
      const api = await login();
      const created = await api.write('POST', '/api/todos', { body: { text: 'a' } });
      const answer = await api.batch([
        batchItem('POST', '/api/todos', { body: { text: 'b' } }),
        batchItem('PATCH', `/api/todos/${created.json.id}`, { body: { done: true }, ifMatch: 1 }),
        batchItem('POST', '/api/todos', { body: [] }),
      ]);
      expect(answer.status).toBe(200);
      expect(answer.json.items.map((item: { status: number }) => item.status)).toEqual([
        201, 200, 422,
      ]);
      expect((await api.get('/api/todos')).json.items).toMatchObject([
        { text: 'a', done: true, revision: 2 },
        { text: 'b', revision: 1 },
      ]);
    });
  });
}

defineCollections('SQLite', async () => openSqliteStore({ path: ':memory:' }));

describe.skipIf(PG_SKIP_REASON !== undefined)('PostgreSQL', () => {
  const schema = newSchema('collections');
  defineCollections(
    'PostgreSQL',
    () => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 4 }),
    () => dropSchema(schema),
  );
});

describe('--collection', () => {
  it('is repeatable and comes from COLLECTIONS too', () => {
    const flags = parseServerArgs(['--collection', 'todos', '--collection', 'shopping-list']);
    expect(flags !== 'help' && flags.collections).toEqual(['todos', 'shopping-list']);
    const env = parseServerArgs([], { COLLECTIONS: 'todos, tags' });
    expect(env !== 'help' && env.collections).toEqual(['todos', 'tags']);
  });

  it('refuses names that are no path segment, and the demo’s own', async () => {
    for (const name of ['Todos', '1st', 'a/b', 'notes', 'x'.repeat(41)]) {
      expect(() => parseServerArgs(['--collection', name])).toThrow(ConfigError);
    }
    const store = openSqliteStore({ path: ':memory:' });
    await expect(buildApp({ store, collections: ['notes'] })).rejects.toThrow(ConfigError);
    await store.close();
  });
});
