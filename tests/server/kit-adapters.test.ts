import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboxKitRouter } from '../../server/kit/express.ts';
import { outboxKitPlugin } from '../../server/kit/fastify.ts';
import { outboxKitMiddleware } from '../../server/kit/hono.ts';
import { RETENTION_HEADER } from '../../server/kit/index.ts';
import { kitRequestListener } from '../../server/kit/node-http.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { batchItem, digestOf, newKey, newUser, send } from './helpers.ts';
import { likesOf, POST } from './kit-next-route.ts';
import { openTodoApp, type TodoApp } from './kit-todo-app.ts';
import { sendRaw } from './raw-http.ts';

/**
 * The kit behind each framework adapter (SPEC §22.1), over real HTTP: the same todo app, the
 * same checks, and the app's own routes still the app's. Each server also answers `GET /health`
 * itself, which the kit must pass on.
 */

interface Running {
  url: string;
  port: number;
  close(): Promise<void>;
}

type Adapter = (app: TodoApp<unknown>) => Promise<Running>;

const listening = (server: import('node:http').Server): Running => {
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

const ADAPTERS: Array<[string, Adapter]> = [
  [
    'Hono 4 (middleware, @hono/node-server)',
    async (app) => {
      const hono = new Hono();
      hono.use(outboxKitMiddleware(app.kit));
      hono.get('/health', (c) => c.json({ ok: true }));
      hono.post('/echo', async (c) => c.json({ echoed: await c.req.json() }));
      const server = await new Promise<import('node:http').Server>((resolve) => {
        const started = serve({ fetch: hono.fetch, port: 0, hostname: '127.0.0.1' }, () =>
          resolve(started as import('node:http').Server),
        );
      });
      return listening(server);
    },
  ],
  [
    'Express 5 (middleware before express.json())',
    async (app) => {
      const server = express();
      server.use(outboxKitRouter(app.kit));
      server.use(express.json());
      server.get('/health', (_request, response) => {
        response.json({ ok: true });
      });
      // The app's own write, its body parsed by express.json() after the kit passed it on.
      server.post('/echo', (request, response) => {
        response.json({ echoed: request.body });
      });
      const http = server.listen(0, '127.0.0.1');
      await new Promise((resolve) => http.once('listening', resolve));
      return listening(http);
    },
  ],
  [
    'Fastify 5 (plugin)',
    async (app) => {
      const fastify = Fastify();
      await fastify.register(outboxKitPlugin(app.kit));
      fastify.get('/health', async () => ({ ok: true }));
      fastify.post('/echo', async (request) => ({ echoed: request.body }));
      await fastify.listen({ port: 0, host: '127.0.0.1' });
      const { port } = fastify.server.address() as AddressInfo;
      return { url: `http://127.0.0.1:${port}`, port, close: () => fastify.close() };
    },
  ],
  [
    'node:http (kitRequestListener)',
    async (app) => {
      const server = createServer(kitRequestListener(app.kit));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return listening(server);
    },
  ],
];

describe.each(ADAPTERS)('the kit behind %s', (name, adapter) => {
  let app: TodoApp<unknown>;
  let server: Running;
  beforeAll(async () => {
    app = await openTodoApp({ kind: 'sqlite' });
    server = await adapter(app);
  });
  afterAll(async () => {
    await server?.close();
    await app?.close();
  });
  /** A batch of `items` (SPEC §15.1) as `user`. */
  const sendBatch = (user: string, items: unknown[]) =>
    send(
      server.url,
      'POST',
      '/sync/batch',
      { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
      JSON.stringify({ items }),
    );

  const create = (user: string, key: string, title: string, extra: Record<string, string> = {}) => {
    const body = JSON.stringify({ title });
    const headers: Record<string, string> = {
      authorization: `Bearer ${user}`,
      'content-type': 'application/json',
      'idempotency-key': `"${key}"`,
      'content-digest': digestOf(body),
      ...extra,
    };
    return send(server.url, 'POST', '/api/todos', headers, body);
  };

  it('creates once and replays, refuses a reused key, and counts one effect', async () => {
    const user = newUser();
    const key = newKey('todo');
    const first = await create(user, key, 'milk');
    expect([first.status, first.headers.get('etag')]).toEqual([201, '"1"']);
    expect(first.headers.get(RETENTION_HEADER)).toBe('604800');
    const again = await create(user, key, 'milk');
    expect([again.status, again.headers.get('idempotent-replayed'), again.text]).toEqual([
      201,
      'true',
      first.text,
    ]);
    const reused = await create(user, key, 'butter');
    expect([reused.status, reused.json.type]).toEqual([422, PROBLEM.keyReused]);
    expect(await app.countTodos(user)).toBe(1);
  });

  it('answers a replay from the head alone, before the body arrives', async () => {
    const user = newUser();
    const key = newKey('todo');
    const body = JSON.stringify({ title: 'eggs' });
    await create(user, key, 'eggs');
    const head =
      'POST /api/todos HTTP/1.1\r\nHost: kit.test\r\n' +
      `authorization: Bearer ${user}\r\ncontent-type: application/json\r\n` +
      `idempotency-key: "${key}"\r\ncontent-digest: ${digestOf(body)}\r\n` +
      `content-length: ${body.length}\r\n\r\n`;
    const answer = await sendRaw(server.port, [head], { timeoutMs: 3000 });
    expect(answer.ending).toBe('answered');
    expect([answer.status, answer.headers['idempotent-replayed']]).toEqual([201, 'true']);
  });

  it('answers 400 for no key and 401 before the ledger', async () => {
    const missing = await send(
      server.url,
      'POST',
      '/api/todos',
      { authorization: 'Bearer alice', 'content-type': 'application/json' },
      '{"title":"x"}',
    );
    expect([missing.status, missing.json.type]).toEqual([400, PROBLEM.keyMissing]);
    const anonymous = await create('expired', newKey('todo'), 'x');
    expect([anonymous.status, anonymous.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
  });

  it('routes a path that starts with // as that path, not as a host: no write of /api/todos, as its batch item', async () => {
    const user = newUser();
    const body = JSON.stringify({ title: 'elsewhere' });
    const head =
      'POST //evil.example/api/todos HTTP/1.1\r\nHost: kit.test\r\n' +
      `authorization: Bearer ${user}\r\ncontent-type: application/json\r\n` +
      `idempotency-key: "${newKey('todo')}"\r\ncontent-length: ${body.length}\r\n\r\n`;
    const alone = await sendRaw(server.port, [head + body], { timeoutMs: 3000 });
    const items = [
      batchItem('POST', '//evil.example/api/todos', { key: newKey('todo'), body: { title: 'b' } }),
    ];
    const batch = await sendBatch(user, items);
    expect([alone.status, batch.json.items[0].status]).toEqual([404, 404]);
    expect(await app.countTodos(user)).toBe(0);
  });

  it('runs batches and receipt lookups, and leaves the app its own routes', async () => {
    const user = newUser();
    const key = newKey('todo');
    const items = [
      batchItem('POST', '/api/todos', { key, body: { title: 'a' } }),
      batchItem('POST', '/api/todos', { key: null, body: { title: 'b' } }),
    ];
    const batch = await sendBatch(user, items);
    expect(batch.status).toBe(200);
    expect(batch.json.items.map((item: { status: number }) => item.status)).toEqual([201, 400]);
    const receipt = await send(server.url, 'GET', `/idempotency/${key}`, {
      authorization: `Bearer ${user}`,
    });
    expect([receipt.status, receipt.json.status]).toEqual([200, 201]);
    const health = await send(server.url, 'GET', '/health', {});
    const echo = await send(
      server.url,
      'POST',
      '/echo',
      { 'content-type': 'application/json' },
      '{"a":1}',
    );
    if (name.startsWith('node:http')) {
      expect([health.status, echo.status]).toEqual([404, 404]);
    } else {
      expect([health.status, health.json]).toEqual([200, { ok: true }]);
      // The kit passed the request on with its body unread.
      expect([echo.status, echo.json]).toEqual([200, { echoed: { a: 1 } }]);
    }
  });
});

describe('a Next.js-style route handler on the kit', () => {
  const like = (user: string | undefined, key: string, post: string) => {
    const body = JSON.stringify({ post });
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'idempotency-key': `"${key}"`,
      'content-digest': digestOf(body),
    };
    if (user) headers['x-user'] = user;
    return POST(new Request('https://app.example/api/likes', { method: 'POST', headers, body }));
  };

  it('is called with a Request and keeps every copy of a key to one effect', async () => {
    const user = newUser();
    const key = newKey('like');
    const answers = await Promise.all(Array.from({ length: 10 }, () => like(user, key, 'p1')));
    for (const answer of answers) expect([201, 409]).toContain(answer.status);
    const replay = await like(user, key, 'p1');
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(await replay.json()).toEqual({ post: 'p1', liked: true });
    expect(likesOf(user)).toBe(1);
    const anonymous = await like(undefined, newKey('like'), 'p2');
    expect(anonymous.status).toBe(401);
  });
});

describe('the Request the Node adapters hand the hooks', () => {
  const seen: string[] = [];
  let app: TodoApp<unknown>;
  let server: Running;
  beforeAll(async () => {
    app = await openTodoApp({
      kind: 'sqlite',
      // A hook that checks a signature over the body reads a copy of it, as a Fetch API hook can.
      async admit(request) {
        const stream = request.body;
        seen.push(`${stream instanceof ReadableStream} ${request.bodyUsed}`);
        if (request.headers.get('x-sign') === 'yes') seen.push(await request.clone().text());
        return undefined;
      },
    });
    const listener = createServer(kitRequestListener(app.kit));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    server = listening(listener);
  });
  afterAll(async () => {
    await server?.close();
    await app?.close();
  });

  const create = (user: string, title: string, extra: Record<string, string> = {}) => {
    const body = JSON.stringify({ title });
    const headers: Record<string, string> = {
      authorization: `Bearer ${user}`,
      'content-type': 'application/json',
      'idempotency-key': `"${newKey('todo')}"`,
      'content-digest': digestOf(body),
      ...extra,
    };
    return send(server.url, 'POST', '/api/todos', headers, body);
  };

  it('has the body as an unread stream, and a hook reading a copy leaves the write its body', async () => {
    const user = newUser();
    seen.length = 0;
    const signed = await create(user, 'signed', { 'x-sign': 'yes' });
    expect([signed.status, signed.json.title]).toEqual([201, 'signed']);
    expect(seen).toEqual(['true false', JSON.stringify({ title: 'signed' })]);
    const plain = await create(user, 'plain');
    expect([plain.status, plain.json.title]).toEqual([201, 'plain']);
    expect(await app.countTodos(user)).toBe(2);
  });
});
