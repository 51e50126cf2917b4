import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../server/index.ts';
import { kitRewriteUrl, outboxKitPlugin } from '../../server/kit/fastify.ts';
import { Api, batchItem, newKey, newUser, startTestServer } from './helpers.ts';
import { openTodoApp } from './kit-todo-app.ts';
import { sendRaw } from './raw-http.ts';

/**
 * A request alone over raw HTTP (its path exactly as sent: no client resolved it) reaches the
 * route its batch item reaches (SPEC §15.1) on the Fastify servers too, whose router matches a
 * path as sent: the reference server, and an app serving the kit with `kitRewriteUrl`.
 */
type Item = ReturnType<typeof batchItem>;
const DOTTED = ['/./notes', '/x/%2E%2E/notes', '\\notes'];

function raw(port: number, item: Item, headers: Record<string, string>) {
  const lines = Object.entries({ ...item.headers, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const body = item.body ?? '';
  return sendRaw(port, [
    `${item.method} ${item.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${lines}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  ]);
}

describe('a request target as a URL reads it, alone as in a batch', () => {
  it.each(DOTTED)('the reference server applies POST /api%s alone, as in a batch', async (tail) => {
    const server = await startTestServer({ store: openSqliteStore({ path: ':memory:' }) });
    try {
      const api = await Api.login(server.url, newUser());
      const path = `/api${tail}`;
      const single = await raw(
        server.port,
        batchItem('POST', path, { key: newKey(), body: { title: 'a' } }),
        {
          authorization: `Bearer ${api.token}`,
        },
      );
      const batched = await api.batch([
        batchItem('POST', path, { key: newKey(), body: { title: 'a' } }),
      ]);
      const [item] = (batched.json as { items: Array<{ status: number }> }).items;
      expect([single.status, item!.status]).toEqual([201, 201]);
    } finally {
      await server.close();
    }
  });

  it('an app serving the kit on Fastify with kitRewriteUrl: the same, and a path the kit does not match is a problem 404', async () => {
    const app = await openTodoApp({ kind: 'sqlite' });
    const fastify = Fastify({ rewriteUrl: kitRewriteUrl });
    await fastify.register(outboxKitPlugin(app.kit));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = fastify.server.address() as AddressInfo;
      const auth = { authorization: `Bearer ${newUser()}` };
      for (const tail of DOTTED) {
        const item = batchItem('POST', `/api${tail.replace('notes', 'todos')}`, {
          key: newKey('todo'),
          body: { title: 'a' },
        });
        expect([tail, (await raw(port, item, auth)).status]).toEqual([tail, 201]);
      }
      // Fastify's router decodes `%74odos` to `todos`; the kit matches a path as sent.
      const encoded = batchItem('POST', '/api/%74odos', {
        key: newKey('todo'),
        body: { title: 'a' },
      });
      const single = await raw(port, encoded, auth);
      const response = await fetch(`http://127.0.0.1:${port}/sync/batch`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ items: [encoded] }),
      });
      const [item] = (await response.json()).items as Array<{
        status: number;
        headers: Record<string, string>;
      }>;
      expect([single.status, single.headers['content-type']]).toEqual([
        item!.status,
        item!.headers['content-type'],
      ]);
      expect(item!.status).toBe(404);
    } finally {
      await fastify.close();
      await app.close();
    }
  });
});
