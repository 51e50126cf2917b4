import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type RunningServer, StoreUnavailableError } from '../../server/index.ts';
import { contentDigest, HEADER } from '../../shared/wire/protocol.ts';
import { Api, newKey, newUser, send, startTestServer, waitFor } from './helpers.ts';

/** Fault injection (SPEC §15) through the admin routes, as the demo and e2e tests use it. */
describe('fault injection', () => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await startTestServer({ store: openSqliteStore({ path: ':memory:' }) });
  });
  afterAll(() => server?.close());

  const admin = (method: string, path: string, body?: unknown) =>
    send(
      server.url,
      method,
      path,
      { 'content-type': 'application/json' },
      body === undefined ? undefined : JSON.stringify(body),
    );

  it('forgets every key on request, as the expiry sweep does past the retention: the key is unknown again', async () => {
    const api = await Api.login(server.url, newUser());
    const key = newKey();
    expect((await api.create('first', { key })).status).toBe(201);
    expect((await api.get(`/idempotency/${key}`)).status).toBe(200);
    const forgotten = await admin('POST', '/__faults/forget-keys');
    expect(forgotten.json.forgotten).toBeGreaterThan(0);
    expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
  });

  it('drops the response after commit; the retry with the same key is a replay of the one effect', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('POST', '/__faults', {
      kind: 'drop-after-commit',
      route: 'POST /api/notes',
      user,
      count: 1,
    });
    const key = newKey();
    await expect(api.create('lost answer', { key })).rejects.toThrow();
    const retried = await api.create('lost answer', { key });
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect((await api.stats(user)).store.notes).toBe(1);
    expect((await admin('GET', '/__faults')).json.rules).toEqual([]);
  });

  it('holds a write past the lease: a copy meanwhile gets 409 request-in-progress, later ones replay', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('POST', '/__faults', { kind: 'delay', ms: 400, route: 'write', user, count: 1 });
    const key = newKey();
    const slow = api.create('slow plate', { key });
    await waitFor(async () => (await admin('GET', '/__stats')).json.inflight === 1);
    const copy = await api.create('slow plate', { key });
    expect(copy.status).toBe(409);
    expect(copy.json.type).toBe('request-in-progress');
    expect(copy.headers.get('retry-after')).toBe('1');
    const misuse = await api.create('other plate', { key });
    expect(misuse.json.type).toBe('idempotency-key-reused');
    const first = await slow;
    expect(first.status).toBe(201);
    const later = await api.create('slow plate', { key });
    expect([later.status, later.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect((await api.stats(user)).store.notes).toBe(1);
  });

  it('answers a burst of 503 (or 429) with Retry-After before auth and the ledger, then recovers', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('POST', '/__faults', {
      rules: [
        { kind: 'unavailable', user, count: 2, retryAfter: 3 },
        { kind: 'unavailable', user, count: 1, status: 429 },
      ],
    });
    const key = newKey();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await api.create('plate', { key }));
    expect(answers.map((a) => a.status)).toEqual([503, 503, 429, 201]);
    expect(answers[0]!.headers.get('retry-after')).toBe('3');
    expect(answers[2]!.json.type).toBe('too-many-requests');
    expect(answers[3]!.headers.get('idempotent-replayed')).toBeNull();
  });

  it('opens a 401 window for one user until that user logs in again', async () => {
    const user = newUser();
    const other = await Api.login(server.url, newUser());
    const api = await Api.login(server.url, user);
    await admin('POST', '/__faults/expire-token', { user });
    expect((await api.get('/api/notes')).status).toBe(401);
    expect((await api.get('/api/notes')).status).toBe(401);
    expect((await other.get('/api/notes')).status).toBe(200);
    const again = await Api.login(server.url, user);
    expect((await again.get('/api/notes')).status).toBe(200);
  });

  it('bumps a revision as another device, so the next write of the old revision conflicts', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    const created = await api.create('shared');
    const edited = await admin('POST', '/__faults/edit', {
      user,
      id: created.json.id,
      body: 'from the tablet',
    });
    expect(edited.json).toEqual({
      id: created.json.id,
      revision: 2,
      title: 'shared',
      body: 'from the tablet',
    });
    const stale = await api.patch(created.json.id, 1, { title: 'from the phone' });
    expect(stale.status).toBe(412);
    expect(stale.json).toMatchObject({ currentRevision: 2, current: { body: 'from the tablet' } });
    expect((await admin('POST', '/__faults/edit', { user, id: 'note-nope' })).status).toBe(404);
  });

  it('applies rules only to their user and route, and rejects malformed rules', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    const bystander = await Api.login(server.url, newUser());
    await admin('POST', '/__faults', { kind: 'unavailable', user, route: 'PATCH /api/notes/:id' });
    expect((await bystander.create('fine')).status).toBe(201);
    const mine = await api.create('fine too');
    expect(mine.status).toBe(201);
    expect((await api.patch(mine.json.id, 1, { title: 'x' })).status).toBe(503);
    expect((await admin('DELETE', '/__faults')).json.removed).toBe(1);
    expect((await api.patch(mine.json.id, 1, { title: 'x' })).status).toBe(200);
    const bad = await admin('POST', '/__faults', { kind: 'explode' });
    expect([bad.status, bad.json.type]).toEqual([422, 'validation-failed']);
  });

  it('removes the rules of one user, or one rule by id', async () => {
    const [alice, bob] = [newUser(), newUser()];
    const added = await admin('POST', '/__faults', {
      rules: [
        { kind: 'unavailable', user: alice },
        { kind: 'unavailable', user: alice, route: 'write' },
        { kind: 'unavailable', user: bob },
      ],
    });
    const ids = added.json.rules.map((rule: { id: number }) => rule.id);
    expect((await admin('DELETE', `/__faults/${ids[2]}`)).json.removed).toBe(1);
    expect((await admin('DELETE', `/__faults/${ids[2]}`)).status).toBe(404);
    expect((await admin('DELETE', `/__faults?user=${alice}`)).json.removed).toBe(2);
    expect((await admin('GET', '/__faults')).json.rules).toEqual([]);
  });

  it('lets a delayed write go as soon as it is released, long before its delay is over', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('POST', '/__faults', { kind: 'delay', ms: 60_000, route: 'write', user, count: 1 });
    const key = newKey();
    const started = performance.now();
    const slow = api.create('released', { key });
    await waitFor(async () => (await admin('GET', '/__stats')).json.inflight === 1);
    expect((await admin('POST', '/__faults/release', { user: newUser() })).json.released).toBe(0);
    expect((await admin('POST', '/__faults/release', { user })).json.released).toBe(1);
    expect((await slow).status).toBe(201);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('logs every api request with its key, user, referer and answer, and one the client gave up on as aborted', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('DELETE', '/__requests');
    const key = newKey();
    await admin('POST', '/__faults', { kind: 'unavailable', route: 'write', user, count: 1 });
    await api.create('logged', { key, headers: { referer: `${server.url}/sw.js?lease=1` } });
    await api.create('logged', { key });
    await admin('POST', '/__faults', { kind: 'delay', ms: 60_000, route: 'write', user, count: 1 });
    const gone = newKey();
    const controller = new AbortController();
    const abandoned = fetch(`${server.url}/api/notes`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${api.token}`,
        'content-type': 'application/json',
        'idempotency-key': `"${gone}"`,
      },
      body: JSON.stringify({ title: 'abandoned' }),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await waitFor(async () => (await admin('GET', '/__stats')).json.inflight === 1);
    controller.abort();
    expect(await abandoned).toBe('aborted');
    await waitFor(async () =>
      (await admin('GET', `/__requests?user=${user}`)).json.requests.some(
        (entry: { aborted?: boolean }) => entry.aborted,
      ),
    );
    await admin('POST', '/__faults/release', { user });

    const { requests } = (await admin('GET', `/__requests?user=${user}`)).json;
    expect(
      requests.map((entry: Record<string, unknown>) => [
        entry.method,
        entry.route,
        entry.key,
        entry.status ?? (entry.aborted ? 'aborted' : 'none'),
        entry.authorized,
      ]),
    ).toEqual([
      ['POST', '/api/notes', key, 503, true],
      ['POST', '/api/notes', key, 201, true],
      ['POST', '/api/notes', gone, 'aborted', true],
    ]);
    expect(requests[0].referer).toBe(`${server.url}/sw.js?lease=1`);
    expect(requests[1].referer).toBeUndefined();
    expect(requests[1].digest).toBe(requests[0].digest);
    expect(requests[0].digest).toMatch(/^sha-256=:/);
    expect(requests.every((entry: { user: string }) => entry.user === user)).toBe(true);
  });

  it('logs a batch request with its item count, then each item as its request alone, with its own answer (SPEC §15.1)', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    await admin('DELETE', '/__requests');
    const [good, bad] = [newKey(), newKey()];
    const item = (key: string, title: string) => {
      const body = JSON.stringify({ title });
      return {
        method: 'POST',
        path: '/api/notes',
        headers: {
          'idempotency-key': `"${key}"`,
          'content-type': 'application/json',
          'content-digest': contentDigest(body),
        },
        body,
      };
    };
    const batch = (items: unknown[]) =>
      send(
        server.url,
        'POST',
        '/sync/batch',
        {
          authorization: `Bearer ${api.token}`,
          'content-type': 'application/json',
          referer: `${server.url}/sw.js`,
        },
        JSON.stringify({ items }),
      );
    expect((await batch([item(good, 'kept'), item(bad, '')])).status).toBe(200);
    await admin('POST', '/__faults', { kind: 'unavailable', route: 'POST /sync/batch', user });
    expect((await batch([item(good, 'kept')])).status).toBe(503);
    await admin('DELETE', `/__faults?user=${user}`);

    const { requests } = (await admin('GET', `/__requests?user=${user}`)).json;
    expect(
      requests.map((entry: Record<string, unknown>) => [
        entry.seq,
        entry.route,
        entry.key,
        entry.status,
        entry.items,
        entry.batch,
      ]),
    ).toEqual([
      [expect.any(Number), '/sync/batch', undefined, 200, 2, undefined],
      [requests[0].seq + 1, '/api/notes', good, 201, undefined, requests[0].seq],
      [requests[0].seq + 2, '/api/notes', bad, 422, undefined, requests[0].seq],
      // Turned away before its body was read: the batch alone is logged.
      [requests[0].seq + 3, '/sync/batch', undefined, 503, undefined, undefined],
    ]);
    expect(requests[1].referer).toBe(`${server.url}/sw.js`);
    expect(requests[1].digest).toBe(item(good, 'kept').headers['content-digest']);
  });

  it('counts effects per key and resets the counters', async () => {
    const user = newUser();
    const api = await Api.login(server.url, user);
    const key = newKey();
    await api.create('counted', { key });
    await api.create('counted', { key });
    const stats = await api.stats(user);
    expect(stats.process).toMatchObject({ effects: 1, replays: 1, effectsByKey: { [key]: 1 } });
    expect(stats.store).toMatchObject({ notes: 1, receipts: 1 });
    await admin('DELETE', '/__stats');
    expect((await api.stats(user)).process.effects).toBe(0);
  });
});

describe('server options', () => {
  it('has no admin routes unless asked, and can leave the server copy out of a 412', async () => {
    const server = await startTestServer({
      store: openSqliteStore({ path: ':memory:' }),
      admin: false,
      conflictIncludesCurrent: false,
    });
    try {
      expect((await send(server.url, 'GET', '/__stats', {})).status).toBe(404);
      expect(
        (await send(server.url, 'POST', '/__faults', { 'content-type': 'application/json' }, '{}'))
          .status,
      ).toBe(404);
      const api = await Api.login(server.url, newUser());
      const created = await api.create('x');
      await api.patch(created.json.id, 1, { title: 'y' });
      const stale = await api.patch(created.json.id, 1, { title: 'z' });
      expect(stale.json.currentRevision).toBe(2);
      expect(stale.json).not.toHaveProperty('current');
      const retention = await api.get('/idempotency');
      expect(retention.json.retentionSeconds).toBeGreaterThanOrEqual(7 * 24 * 3600);
    } finally {
      await server.close();
    }
  });

  it('publishes its retention on every answer — a write, a refusal, a lookup — and at GET /idempotency', async () => {
    const server = await startTestServer({
      store: openSqliteStore({ path: ':memory:' }),
      retentionMs: 3 * 60 * 60 * 1000,
    });
    try {
      const api = await Api.login(server.url, newUser());
      const created = await api.create('x');
      const refused = await send(server.url, 'GET', '/api/notes', {});
      const missing = await api.get(`/idempotency/${newKey()}`);
      const described = await api.get('/idempotency');
      expect(refused.status).toBe(401);
      expect(missing.status).toBe(404);
      for (const answer of [created, refused, missing, described])
        expect(answer.headers.get(HEADER.retention)).toBe(String(3 * 60 * 60));
      expect(described.json.retentionSeconds).toBe(3 * 60 * 60);
    } finally {
      await server.close();
    }
  });

  it('answers 503 with Retry-After when storage is unavailable, and stores nothing', async () => {
    const store = openSqliteStore({ path: ':memory:' });
    const server = await startTestServer({ store });
    const realTransact = store.ledger.transact;
    store.ledger.transact = async () => {
      throw new StoreUnavailableError('busy');
    };
    try {
      const api = await Api.login(server.url, newUser());
      const key = newKey();
      const busy = await api.create('x', { key });
      expect([busy.status, busy.json.type, busy.headers.get('retry-after')]).toEqual([
        503,
        'service-unavailable',
        '1',
      ]);
      store.ledger.transact = realTransact;
      const retried = await api.create('x', { key });
      expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([201, null]);
    } finally {
      await server.close();
    }
  });
});
