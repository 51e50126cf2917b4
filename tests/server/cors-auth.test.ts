import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, parseServerArgs, type RunningServer } from '../../server/index.ts';
import { digestOf, newKey, send, startTestServer } from './helpers.ts';

/**
 * SPEC §22: the server package runs apart from the app — pages of other origins may call it
 * when named (CORS), and a deployment plugs in its own auth (a request → a principal).
 */
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const APP = 'https://app.example.com';

describe('cross-origin pages', () => {
  it('get CORS answers when their origin is named, and a preflight with the protocol headers', async () => {
    server = await startTestServer({
      store: { kind: 'sqlite', path: ':memory:' },
      corsOrigins: [APP],
    });
    const preflight = await send(server.url, 'OPTIONS', '/api/notes', {
      origin: APP,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'idempotency-key, content-digest, authorization',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    for (const header of ['idempotency-key', 'content-digest', 'if-match', 'authorization'])
      expect(preflight.headers.get('access-control-allow-headers')).toContain(header);

    const login = await send(
      server.url,
      'POST',
      '/auth/login',
      { origin: APP, 'content-type': 'application/json' },
      JSON.stringify({ user: 'alice' }),
    );
    expect(login.headers.get('access-control-allow-origin')).toBe(APP);
    expect(login.headers.get('access-control-expose-headers')).toContain('etag');
    expect(login.headers.get('vary')).toContain('Origin');
  });

  it('gives an origin it was not told about nothing, and no origin at all by default', async () => {
    server = await startTestServer({
      store: { kind: 'sqlite', path: ':memory:' },
      corsOrigins: [APP],
    });
    const other = await send(server.url, 'OPTIONS', '/api/notes', {
      origin: 'https://evil.example',
      'access-control-request-method': 'POST',
    });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    await server.close();
    server = await startTestServer({ store: { kind: 'sqlite', path: ':memory:' } });
    const none = await send(server.url, 'GET', '/api/notes', { origin: APP });
    expect(none.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('takes origins from the command line, and refuses what is not an origin', () => {
    const options = parseServerArgs([
      '--cors-origin',
      APP,
      '--cors-origin',
      'http://localhost:5173',
    ]);
    expect(options !== 'help' && options.corsOrigins).toEqual([APP, 'http://localhost:5173']);
    expect(parseServerArgs([], { CORS_ORIGINS: `${APP}, http://localhost:5173` })).toMatchObject({
      corsOrigins: [APP, 'http://localhost:5173'],
    });
    expect(() => parseServerArgs(['--cors-origin', 'https://app.example.com/path'])).toThrow(
      ConfigError,
    );
    expect(() => parseServerArgs(['--cors-origin', 'not a url'])).toThrow(ConfigError);
  });
});

describe("a deployment's own auth", () => {
  const create = (token: string, user: string) =>
    send(
      server!.url,
      'POST',
      '/api/notes',
      {
        'x-session': token,
        'content-type': 'application/json',
        'idempotency-key': `"${newKey()}"`,
        'content-digest': digestOf(`{"title":"${user}"}`),
      },
      `{"title":"${user}"}`,
    );

  it('names the principal the ledger keys by; 401 for what it refuses; no demo login', async () => {
    const sessions: Record<string, string> = { s1: 'alice', s2: 'bob' };
    server = await startTestServer({
      store: { kind: 'sqlite', path: ':memory:' },
      authenticate: async (request) => {
        const session = request.headers['x-session'];
        if (typeof session !== 'string') return { kind: 'missing' };
        const user = sessions[session];
        return user ? { kind: 'ok', user } : { kind: 'invalid' };
      },
    });
    expect((await create('s1', 'alice')).status).toBe(201);
    expect((await create('s2', 'bob')).status).toBe(201);
    const alice = await send(server.url, 'GET', '/api/notes', { 'x-session': 's1' });
    expect(alice.json.items.map((n: { title: string }) => n.title)).toEqual(['alice']);
    const refused = await create('nope', 'mallory');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('invalid_token');
    expect(
      (
        await send(
          server.url,
          'POST',
          '/auth/login',
          { 'content-type': 'application/json' },
          '{"user":"x"}',
        )
      ).status,
    ).toBe(404);
  });

  it('answers 503, not a crash, when the auth itself fails: the client retries the same key', async () => {
    server = await startTestServer({
      store: { kind: 'sqlite', path: ':memory:' },
      authenticate: () => Promise.reject(new Error('session store down')),
    });
    const answer = await create('s1', 'alice');
    expect(answer.status).toBe(503);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
  });
});
