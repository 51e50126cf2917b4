import { describe, expect, it } from 'vitest';
import {
  buildApp,
  DEMO_AUTH_SECRET,
  DemoAuth,
  isLoopback,
  openSqliteStore,
  secretWeakness,
  startServer,
} from '../../server/index.ts';
import { Api, newUser } from './helpers.ts';

const STRONG_SECRET = 'a-deployment-secret-of-40-characters-abc';

describe('demo auth tokens', () => {
  const clock = (start: number) => {
    let now = start;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };

  it('accepts its own tokens on every instance sharing the secret, and nothing else', () => {
    const time = clock(1_000);
    const a = new DemoAuth({ secret: 's3cret', now: time.now });
    const b = new DemoAuth({ secret: 's3cret', now: time.now });
    const token = a.issue('alice');
    expect(b.check(`Bearer ${token}`)).toEqual({ kind: 'ok', user: 'alice' });
    expect(new DemoAuth({ secret: 'other', now: time.now }).check(`Bearer ${token}`)).toEqual({
      kind: 'invalid',
    });
    expect(a.check(`Bearer ${token.slice(0, -2)}xx`)).toEqual({ kind: 'invalid' });
    expect(a.check('Bearer nonsense')).toEqual({ kind: 'invalid' });
    expect(a.check(undefined)).toEqual({ kind: 'missing' });
    expect(a.check(`Basic ${token}`)).toEqual({ kind: 'missing' });
  });

  it('expires every token of a user until the next login, leaving other users alone', () => {
    const time = clock(5_000);
    const auth = new DemoAuth({ secret: 's', now: time.now });
    const old = auth.issue('alice');
    const bob = auth.issue('bob');
    auth.expire('alice');
    expect(auth.check(`Bearer ${old}`)).toEqual({ kind: 'expired', user: 'alice' });
    expect(auth.check(`Bearer ${bob}`)).toEqual({ kind: 'ok', user: 'bob' });
    const fresh = auth.issue('alice');
    expect(auth.check(`Bearer ${fresh}`)).toEqual({ kind: 'ok', user: 'alice' });
    expect(auth.check(`Bearer ${old}`)).toEqual({ kind: 'expired', user: 'alice' });
  });

  it('expires tokens after their lifetime', () => {
    const time = clock(0);
    const auth = new DemoAuth({ secret: 's', now: time.now, ttlMs: 1_000 });
    const token = auth.issue('alice');
    time.advance(1_000);
    expect(auth.check(`Bearer ${token}`).kind).toBe('ok');
    time.advance(1);
    expect(auth.check(`Bearer ${token}`).kind).toBe('expired');
  });

  it('refuses tokens dated further ahead than the clock skew, so none outlives its lifetime', () => {
    const time = clock(10_000_000);
    const auth = new DemoAuth({ secret: 's', now: time.now, ttlMs: 1_000, clockSkewMs: 60_000 });
    const datedAhead = (ms: number) =>
      new DemoAuth({ secret: 's', now: () => time.now() + ms }).issue('alice');
    expect(auth.check(`Bearer ${datedAhead(60_001)}`)).toEqual({ kind: 'invalid' });
    expect(auth.check(`Bearer ${datedAhead(100 * 365 * 86_400_000)}`)).toEqual({
      kind: 'invalid',
    });
    const ahead = datedAhead(60_000);
    expect(auth.check(`Bearer ${ahead}`).kind).toBe('ok');
    time.advance(61_000);
    expect(auth.check(`Bearer ${ahead}`).kind).toBe('ok');
    time.advance(1);
    expect(auth.check(`Bearer ${ahead}`).kind).toBe('expired');
  });

  it('expires tokens dated within the clock skew too, and accepts the next login at once', () => {
    const time = clock(10_000_000);
    const auth = new DemoAuth({ secret: 's', now: time.now, clockSkewMs: 60_000 });
    const other = new DemoAuth({ secret: 's', now: time.now, clockSkewMs: 60_000 });
    const ahead = new DemoAuth({ secret: 's', now: () => time.now() + 30_000 }).issue('alice');
    expect(auth.check(`Bearer ${ahead}`).kind).toBe('ok');
    auth.expire('alice');
    expect(auth.check(`Bearer ${ahead}`)).toEqual({ kind: 'expired', user: 'alice' });
    time.advance(40_000);
    expect(auth.check(`Bearer ${ahead}`)).toEqual({ kind: 'expired', user: 'alice' });
    const fresh = auth.issue('alice');
    expect(auth.check(`Bearer ${fresh}`)).toEqual({ kind: 'ok', user: 'alice' });
    expect(other.check(`Bearer ${fresh}`)).toEqual({ kind: 'ok', user: 'alice' });
  });

  it.each([
    [undefined, 'no auth secret is set'],
    ['', 'no auth secret is set'],
    [DEMO_AUTH_SECRET, 'the auth secret is the published demo secret'],
    ['x'.repeat(31), 'the auth secret is shorter than 32 characters'],
    ['x'.repeat(32), undefined],
  ])('judges the secret %j: %s', (secret, weakness) => {
    expect(secretWeakness(secret)).toBe(weakness);
  });

  it.each([
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['[::1]', true],
    ['::ffff:127.0.0.1', true],
    ['localhost', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['127.0.0.1.example.com', false],
    [undefined, false],
  ])('takes %j as loopback: %s', (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback);
  });
});

describe('demo auth beyond loopback', () => {
  const app = (authSecret?: string) =>
    buildApp({ store: openSqliteStore({ path: ':memory:' }), admin: true, authSecret });
  const login = (server: Awaited<ReturnType<typeof app>>, remoteAddress: string) =>
    server.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { user: 'alice' },
      remoteAddress,
    });

  it('with the public demo secret, serves loopback peers only: 403 login, 401 token, 404 admin', async () => {
    const server = await app();
    const local = await login(server, '127.0.0.1');
    expect(local.statusCode).toBe(200);
    const remote = await login(server, '203.0.113.7');
    expect([remote.statusCode, remote.json().type]).toEqual([403, 'forbidden']);
    const list = (remoteAddress: string) =>
      server.inject({
        method: 'GET',
        url: '/api/notes',
        headers: { authorization: `Bearer ${local.json().token}` },
        remoteAddress,
      });
    expect((await list('::1')).statusCode).toBe(200);
    const refused = await list('203.0.113.7');
    expect([refused.statusCode, refused.json().type]).toEqual([401, 'auth-required']);
    expect(refused.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(refused.json().detail).toMatch(/demo secret/);
    const stats = await server.inject({
      method: 'GET',
      url: '/__stats',
      remoteAddress: '10.1.2.3',
    });
    expect([stats.statusCode, stats.json().type]).toEqual([404, 'not-found']);
    await server.close();
  });

  it('with a strong secret, serves every peer, but keeps the admin routes to loopback', async () => {
    const server = await app(STRONG_SECRET);
    const remote = await login(server, '203.0.113.7');
    expect(remote.statusCode).toBe(200);
    const list = await server.inject({
      method: 'GET',
      url: '/api/notes',
      headers: { authorization: `Bearer ${remote.json().token}` },
      remoteAddress: '203.0.113.7',
    });
    expect(list.statusCode).toBe(200);
    const stats = await server.inject({
      method: 'GET',
      url: '/__stats',
      remoteAddress: '10.1.2.3',
    });
    expect(stats.statusCode).toBe(404);
    await server.close();
  });

  it('refuses to listen beyond loopback without a strong secret, or with admin routes', async () => {
    const start = (options: { authSecret?: string; admin?: boolean }) =>
      startServer({
        store: { kind: 'sqlite', path: ':memory:' },
        port: 0,
        host: '0.0.0.0',
        ...options,
      });
    for (const authSecret of [undefined, DEMO_AUTH_SECRET, 'too-short']) {
      await expect(start({ authSecret })).rejects.toMatchObject({
        code: 'invalid_config',
        message: expect.stringMatching(/^refusing to listen on 0\.0\.0\.0: /),
      });
    }
    await expect(start({ authSecret: STRONG_SECRET, admin: true })).rejects.toThrow(
      /refusing to listen on 0\.0\.0\.0 with admin routes/,
    );
  });

  it('listens on any loopback address with the demo secret and no configuration', async () => {
    const server = await startServer({
      store: { kind: 'sqlite', path: ':memory:' },
      port: 0,
      host: '127.0.0.2',
      admin: true,
    });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/);
      const api = await Api.login(server.url, newUser());
      expect((await api.create('on another loopback address')).status).toBe(201);
    } finally {
      await server.close();
    }
  });
});
