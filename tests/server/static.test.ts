import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type RunningServer } from '../../server/index.ts';
import { send, startTestServer } from './helpers.ts';

describe('static files for the demo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-static-'));
  let server: RunningServer;

  beforeAll(async () => {
    mkdirSync(join(dir, 'app'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>demo</title>');
    writeFileSync(join(dir, 'app', 'sw.js'), 'self.addEventListener("fetch", () => {});');
    writeFileSync(join(dir, 'manifest.webmanifest'), '{}');
    server = await startTestServer({
      store: openSqliteStore({ path: ':memory:' }),
      staticDir: dir,
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['/', 'text/html; charset=utf-8', '<!doctype html><title>demo</title>'],
    [
      '/app/sw.js?v=2',
      'text/javascript; charset=utf-8',
      'self.addEventListener("fetch", () => {});',
    ],
    ['/manifest.webmanifest', 'application/manifest+json; charset=utf-8', '{}'],
  ])('serves %s with its content type and no-cache', async (path, type, body) => {
    const answer = await send(server.url, 'GET', path, {});
    expect([answer.status, answer.headers.get('content-type'), answer.text]).toEqual([
      200,
      type,
      body,
    ]);
    expect(answer.headers.get('cache-control')).toBe('no-cache');
  });

  it.each(['/missing.js', '/../package.json', '/%2e%2e/package.json', '/app/%00'])(
    'answers 404 problem for %s',
    async (path) => {
      const answer = await send(server.url, 'GET', path, {});
      expect(answer.status).toBe(404);
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    },
  );

  it('keeps the API in front of the files', async () => {
    expect((await send(server.url, 'GET', '/api/notes', {})).status).toBe(401);
  });
});
