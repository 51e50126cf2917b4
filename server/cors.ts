import type { FastifyInstance } from 'fastify';
import { HEADER } from 'sw-outbox/wire';

/**
 * Cross-origin access for apps served from another origin than the server (SPEC §22: "allowed
 * CORS origins"). Off unless origins are named: a request from a named origin gets its
 * `Access-Control-Allow-Origin`, and its preflight (`OPTIONS` with
 * `Access-Control-Request-Method`) is answered 204 with the methods and headers the protocol
 * uses (§15). Credentials may ride along (cookie sessions); other origins get no CORS headers,
 * so the browser keeps them out.
 */

/** Request headers a client of the protocol sends (§15), beside the CORS-safelisted ones. */
const ALLOWED_HEADERS = [
  HEADER.idempotencyKey,
  HEADER.contentDigest,
  HEADER.ifMatch,
  HEADER.authorization,
  'content-type',
].join(', ');

/** Response headers a client reads (§15): entity tags, replays, backoff, challenges. */
const EXPOSED_HEADERS = [
  HEADER.etag,
  HEADER.replayed,
  HEADER.retryAfter,
  HEADER.wwwAuthenticate,
  'link',
].join(', ');

const METHODS = 'GET, POST, PATCH, PUT, DELETE';
const PREFLIGHT_MAX_AGE_S = 600;

/** The origins as `URL.origin` strings; throws for anything that is not an origin. */
export function parseCorsOrigins(origins: readonly string[]): string[] {
  return origins.map((origin) => {
    const parsed = new URL(origin);
    if (parsed.origin === 'null' || `${parsed.origin}/` !== parsed.href.replace(/\/?$/, '/'))
      throw new Error(`${origin} is not an origin (scheme://host[:port])`);
    return parsed.origin;
  });
}

/** Adds CORS for `origins` to the app: headers on every answer to them, and preflights. */
export function allowCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !allowed.has(origin)) return done();
    reply.header('access-control-allow-origin', origin);
    reply.header('access-control-allow-credentials', 'true');
    reply.header('vary', 'Origin');
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
      reply
        .code(204)
        .header('access-control-allow-methods', METHODS)
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_S))
        .send();
      return;
    }
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    done();
  });
}
