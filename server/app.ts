import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyServerOptions,
} from 'fastify';
import { HEADER, PROBLEM } from '../shared/wire.ts';
import { DemoAuth } from './auth.ts';
import type { AppContext } from './context.ts';
import { FaultInjector } from './faults.ts';
import { sha256Digest } from './fingerprint.ts';
import { gate } from './gate.ts';
import { InflightKeys } from './inflight.ts';
import { sendProblem } from './problem.ts';
import { logRequests, RequestLog } from './request-log.ts';
import { adminRoutes } from './routes/admin.ts';
import { loginRoutes } from './routes/login.ts';
import { notesRoutes } from './routes/notes.ts';
import { receiptRoutes } from './routes/receipts.ts';
import { serveStatic } from './static-files.ts';
import { ServerStats } from './stats.ts';
import { type ServerStore, StoreUnavailableError } from './store/port.ts';

/** Ledger retention (SPEC §15: at least 7 days, published at `GET /idempotency`). */
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** Request body limit; larger bodies get 413 before they are read. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;
/** The demo's token secret; instances sharing a ledger share it. Replace it outside demos. */
export const DEMO_AUTH_SECRET = 'sw-outbox-demo-secret';

export interface AppOptions {
  store: ServerStore;
  /** Registers `/__faults` and `/__stats` (tests and the demo). Default off. */
  admin?: boolean;
  /** A fault registry to share with the caller; a fresh, empty one by default. */
  faults?: FaultInjector;
  /** HMAC secret of demo tokens. Default {@link DEMO_AUTH_SECRET}. */
  authSecret?: string;
  tokenTtlMs?: number;
  /** Send the server copy as `current` with a 412 (SPEC §10 evidence). Default on. */
  conflictIncludesCurrent?: boolean;
  /** Default {@link DEFAULT_BODY_LIMIT}. */
  bodyLimit?: number;
  /** Published retention; the sweep itself is run by `startServer`. */
  retentionMs?: number;
  /** Serve files from this directory for other GET requests (the demo). */
  staticDir?: string;
  /** Fastify's logger; off by default because it costs throughput on the hot path. */
  logger?: FastifyServerOptions['logger'];
  now?: () => number;
}

/**
 * Builds the reference server (SPEC §15) without listening: demo auth, the `notes` collection
 * behind the three idempotency checks, receipt lookup, optional admin routes and static files.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? Date.now;
  const admin = options.admin ?? false;
  const ctx: AppContext = {
    store: options.store,
    auth: new DemoAuth({
      secret: options.authSecret ?? DEMO_AUTH_SECRET,
      ttlMs: options.tokenTtlMs,
      now,
    }),
    faults: options.faults ?? new FaultInjector(),
    stats: new ServerStats({ perKey: admin }),
    inflight: new InflightKeys(),
    now,
    ...(admin ? { requests: new RequestLog() } : {}),
    conflictIncludesCurrent: options.conflictIncludesCurrent ?? true,
  };

  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    forceCloseConnections: true,
    return503OnClosing: true,
  });
  app.decorateRequest('principal', '');
  app.decorateRequest('idempotencyKey', '');
  app.decorateRequest('bodyDigest', null);
  app.decorateRequest('comparedFingerprint', null);
  if (ctx.requests) logRequests(app, ctx, ctx.requests);

  // The body is read as bytes so its digest is the fingerprint's digest (SPEC §15).
  // Only JSON is accepted (415 otherwise, SPEC §15 clear problems for every bad input).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    const bytes = raw as Buffer;
    request.bodyDigest = sha256Digest(bytes);
    if (bytes.length === 0) return done(null, undefined);
    try {
      done(null, JSON.parse(bytes.toString('utf8')));
    } catch {
      done(new MalformedBodyError(), undefined);
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof MalformedBodyError) return sendProblem(reply, 400, PROBLEM.malformedBody);
    if (error instanceof StoreUnavailableError) {
      reply.header(HEADER.retryAfter, '1');
      return sendProblem(reply, 503, PROBLEM.unavailable, { detail: 'storage is busy; retry' });
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(reply, 413, PROBLEM.bodyTooLarge);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(reply, 415, PROBLEM.unsupportedMediaType);
    }
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return sendProblem(reply, status, PROBLEM.badRequest, { detail: error.message });
    }
    request.log.error(error);
    return sendProblem(reply, 500, PROBLEM.internal);
  });

  app.setNotFoundHandler(async (request, reply) => {
    if (options.staticDir && (request.method === 'GET' || request.method === 'HEAD')) {
      const served = await serveStatic(options.staticDir, request, reply);
      if (served) return served;
    }
    return sendProblem(reply, 404, PROBLEM.notFound);
  });

  await app.register(loginRoutes(ctx));
  await app.register(async (scope) => {
    scope.addHook('onRequest', gate(ctx));
    await scope.register(notesRoutes(ctx));
    await scope.register(receiptRoutes(ctx, options.retentionMs ?? DEFAULT_RETENTION_MS));
  });
  if (admin) await app.register(adminRoutes(ctx));
  return app;
}

/** A body that is not JSON (400 `malformed-body`). */
class MalformedBodyError extends Error {
  override readonly name = 'MalformedBodyError';
  readonly statusCode = 400;
}
