import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.wasm': 'application/wasm',
};

/**
 * Serves files below `root` for `GET`/`HEAD` (the demo PWA, SPEC §16); `undefined` when there is
 * no such file so the caller can answer 404. Nothing is cached (`no-cache`): the demo's service
 * worker must see a new build at once. Paths that leave `root` are never served.
 */
export async function serveStatic(root: string, request: FastifyRequest, reply: FastifyReply) {
  const base = resolve(root);
  let path: string;
  try {
    path = decodeURIComponent(request.url.split('?')[0] ?? '/');
  } catch {
    return undefined;
  }
  if (path.includes('\0')) return undefined;
  let file = normalize(join(base, path));
  if (file !== base && !file.startsWith(base + sep)) return undefined;
  let info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) {
    file = join(file, 'index.html');
    info = await stat(file).catch(() => undefined);
  }
  if (!info?.isFile()) return undefined;
  reply
    .header(
      'content-type',
      CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
    )
    .header('content-length', info.size)
    .header('cache-control', 'no-cache');
  if (request.method === 'HEAD') return reply.send();
  return reply.send(createReadStream(file));
}
