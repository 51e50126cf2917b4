import { isUtf8 } from 'node:buffer';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  BATCH_PATH,
  type BatchLimits,
  formatBatchLink,
  formatRetention,
  HEADER,
  PROBLEM,
} from 'sw-outbox/wire';
import { type Authenticate, DEMO_AUTH_SECRET, DemoAuth, secretWeakness } from './auth.ts';
import { ConfigError } from './config-error.ts';
import type { AppContext } from './context.ts';
import { allowCors } from './cors.ts';
import { handleError, MAX_PARAM_LENGTH, MalformedBodyError } from './error-handler.ts';
import { FaultInjector } from './faults.ts';
import { gate } from './gate.ts';
import {
  clientErrorHandler,
  createHttpServer,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
} from './http-server.ts';
import { kitRewriteUrl } from './kit/fastify.ts';
import { sendProblem } from './problem.ts';
import { referenceKit } from './reference-kit.ts';
import { logRequests, RequestLog } from './request-log.ts';
import { adminRoutes } from './routes/admin.ts';
import {
  collectionNameProblem,
  collectionReadRoutes,
  collectionWriteRoutes,
} from './routes/collections.ts';
import { loginRoutes } from './routes/login.ts';
import { notesRoutes } from './routes/notes.ts';
import { serveStatic } from './static-files.ts';
import { ServerStats } from './stats.ts';
import type { ServerStore } from './store/port.ts';

/** Ledger retention (SPEC §15: at least 7 days, published at `GET /idempotency`). */
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** Request body limit; larger bodies get 413 before they are read. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;
/**
 * The batch endpoint's defaults (SPEC §15.1), twice what a client sends by default: 100 items,
 * 1 MiB of body. Each item's body also has the body limit of a request alone.
 */
export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxItems: 100, maxBytes: 1024 * 1024 };

/** Where the batch endpoint is and what it takes; every field has a default. */
export interface BatchConfig extends Partial<BatchLimits> {
  /** Default `/sync/batch`. */
  path?: string;
}

/** Idle time of a keep-alive connection between requests (Fastify's default). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** Options of {@link buildApp}. */
export interface AppOptions {
  store: ServerStore;
  /** Registers `/__faults` and `/__stats` (tests and the demo). Default off. */
  admin?: boolean;
  /** A fault registry to share with the caller; a fresh, empty one by default. */
  faults?: FaultInjector;
  /**
   * HMAC secret of demo tokens; instances sharing a ledger share it. Default
   * {@link DEMO_AUTH_SECRET}, which is public: with it (or any secret `secretWeakness` rejects)
   * only loopback clients may log in or present tokens.
   */
  authSecret?: string;
  tokenTtlMs?: number;
  /**
   * Your own auth instead of the demo's tokens (see {@link Authenticate}); `POST /auth/login`
   * is then not served.
   */
  authenticate?: Authenticate;
  /** Origins allowed to call the server from a browser (CORS, `server/cors.ts`). Default none. */
  corsOrigins?: readonly string[];
  /** Time for a request's headers to arrive. Default {@link DEFAULT_HEADERS_TIMEOUT_MS}. */
  headersTimeoutMs?: number;
  /** Time for a whole request to arrive. Default {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
  requestTimeoutMs?: number;
  /** Send the server copy as `current` with a 412 (SPEC §10 evidence). Default on. */
  conflictIncludesCurrent?: boolean;
  /** Default {@link DEFAULT_BODY_LIMIT}. */
  bodyLimit?: number;
  /**
   * The batch endpoint (SPEC §15.1), advertised by a `Link` on every API answer; `false` turns
   * it off (a batch then gets 404, which clients take as "no batches"). Default on, with
   * {@link DEFAULT_BATCH_LIMITS} at `/sync/batch`.
   */
  batch?: BatchConfig | false;
  /**
   * The ledger's retention, published on every answer (`Idempotency-Retention`, seconds) and at
   * `GET /idempotency` (SPEC §15); the sweep itself is run by `startServer`. Default
   * {@link DEFAULT_RETENTION_MS}.
   */
  retentionMs?: number;
  /**
   * Schemaless JSON collections served beside `notes` (`--collection todos`): `/api/<name>` takes
   * any JSON object (routes/collections.ts). Names match `COLLECTION_NAME`; default none.
   */
  collections?: readonly string[];
  /** Serve files from this directory for other GET requests (the demo). */
  staticDir?: string;
  /** Fastify's logger; off by default because it costs throughput on the hot path. */
  logger?: FastifyServerOptions['logger'];
  now?: () => number;
}

/**
 * Builds the reference server (SPEC §15) without listening: demo auth, the `notes` collection
 * behind the three idempotency checks, receipt lookup, the batch endpoint (SPEC §15.1),
 * optional admin routes and static files.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? Date.now;
  const admin = options.admin ?? false;
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const batch =
    options.batch === false
      ? undefined
      : {
          path: options.batch?.path ?? BATCH_PATH,
          maxItems: options.batch?.maxItems ?? DEFAULT_BATCH_LIMITS.maxItems,
          maxBytes: options.batch?.maxBytes ?? DEFAULT_BATCH_LIMITS.maxBytes,
        };
  const batchLink = batch && formatBatchLink(batch.path, batch);
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  const retention = formatRetention(retentionMs);
  const ctx: AppContext = {
    store: options.store,
    auth: new DemoAuth({
      secret: options.authSecret || DEMO_AUTH_SECRET,
      ttlMs: options.tokenTtlMs,
      now,
    }),
    ...(options.authenticate ? { authenticate: options.authenticate } : {}),
    loopbackAuthOnly: secretWeakness(options.authSecret) !== undefined,
    faults: options.faults ?? new FaultInjector(),
    stats: new ServerStats({ perKey: admin }),
    inflight: { size: 0 },
    now,
    ...(admin ? { requests: new RequestLog() } : {}),
    conflictIncludesCurrent: options.conflictIncludesCurrent ?? true,
    batchLink,
  };

  const timeouts = {
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
  };
  let closing = false;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit,
    forceCloseConnections: true,
    // Answered by the HTTP server below as a problem (Fastify's own 503 is not one).
    return503OnClosing: false,
    serverFactory: (handler) =>
      createHttpServer(handler, {
        ...timeouts,
        keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
        isClosing: () => closing,
      }),
    clientErrorHandler: clientErrorHandler(timeouts),
    frameworkErrors: handleError,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Paths as a URL reads them, as the kit reads a batch item's (SPEC §15.1).
    rewriteUrl: kitRewriteUrl,
  });
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.decorateRequest('principal', '');
  app.decorateRequest('idempotencyKey', '');
  app.decorateRequest('bodyDigest', null);
  app.decorateRequest('comparedFingerprint', null);
  const logBatchItems = ctx.requests && logRequests(app, ctx, ctx.requests);
  // Every answer says how long a key is remembered (SPEC §15), so a client learns it from the
  // answers it already gets — a refusal included — and never resends a key the server forgot.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header(HEADER.retention, retention);
    done();
  });

  // Bodies the kit does not read (login, admin) are JSON only (415 otherwise), UTF-8 (RFC 8259
  // §8.1): other bytes are refused rather than replaced by U+FFFD. The kit reads its own writes'
  // bodies, after check 1 (server/reference-kit.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, raw, done) => {
    const bytes = raw as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    if (!isUtf8(bytes)) return done(new MalformedBodyError('the body is not UTF-8'), undefined);
    try {
      done(null, JSON.parse(bytes.toString('utf8')));
    } catch {
      done(new MalformedBodyError(), undefined);
    }
  });

  app.setErrorHandler(handleError);

  app.setNotFoundHandler(async (request, reply) => {
    if (options.staticDir && (request.method === 'GET' || request.method === 'HEAD')) {
      const served = await serveStatic(options.staticDir, request, reply);
      if (served) return served;
    }
    return sendProblem(reply, 404, PROBLEM.notFound);
  });

  const collections = [...new Set(options.collections ?? [])];
  for (const name of collections) {
    const problem = collectionNameProblem(name);
    if (problem) throw new ConfigError(`--collection: ${problem}`);
  }
  const kit = referenceKit(ctx, {
    bodyLimit,
    retentionMs,
    batch,
    routes: collections.flatMap((name) => collectionWriteRoutes(ctx, name)),
    ...(logBatchItems ? { batchRead: logBatchItems } : {}),
  });
  ctx.inflight = {
    get size() {
      return kit.kit.inProgress;
    },
  };
  allowCors(app, options.corsOrigins ?? []);
  if (!options.authenticate) await app.register(loginRoutes(ctx));
  await app.register(kit.routes);
  await app.register(async (scope) => {
    scope.addHook('onRequest', gate(ctx));
    await scope.register(notesRoutes(ctx));
    await scope.register(collectionReadRoutes(ctx, collections));
  });
  if (admin) await app.register(adminRoutes(ctx));
  return app;
}
