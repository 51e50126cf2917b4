import type { FastifyInstance } from 'fastify';
import { HEADER } from 'sw-outbox/wire';
import type { DemoAuth } from './auth.ts';

/**
 * Every `/api/` request as the server saw it, for end-to-end suites that must count sends at the
 * server rather than take the client's word (browsers without request interception: Firefox over
 * WebDriver BiDi, WebKit over classic WebDriver). Registered only with the admin routes.
 */

/** One request: who sent it, with which key, and how it ended. */
export interface LoggedRequest {
  /** Arrival order in this process, from 1. */
  seq: number;
  /** Arrival time (the server's clock, ms since the epoch). */
  at: number;
  method: string;
  /** The route pattern, e.g. `/api/notes/:id`, or the path when no route matched. */
  route: string;
  path: string;
  /** The `Idempotency-Key` without its quotes, when there was one. */
  key?: string;
  /** The user the bearer token names, also when it was expired (401) or turned away first. */
  user?: string;
  /** The `Content-Digest` as sent: the same value on every copy of the same bytes. */
  digest?: string;
  /** Whether an `Authorization` header came at all. */
  authorized: boolean;
  /** The `Referer` as sent: a worker's fetch names its script, a page's fetch the page. */
  referer?: string;
  /** The answer's status; absent while in progress and when no answer went out. */
  status?: number;
  /** The connection closed before an answer went out: the client went away, or a drop fault. */
  aborted?: true;
  /** When the answer went out, or the client went away. */
  endedAt?: number;
}

/** A bounded log of requests (oldest dropped first). */
export class RequestLog {
  readonly #entries: LoggedRequest[] = [];
  #seq = 0;

  constructor(private readonly max = 10_000) {}

  /** Records an arrival; the returned entry is completed in place. */
  arrive(entry: Omit<LoggedRequest, 'seq'>): LoggedRequest {
    const logged = { seq: ++this.#seq, ...entry };
    this.#entries.push(logged);
    if (this.#entries.length > this.max) this.#entries.shift();
    return logged;
  }

  /** The requests of one user (every request when omitted), in arrival order. */
  list(user?: string): LoggedRequest[] {
    const entries =
      user === undefined ? this.#entries : this.#entries.filter((e) => e.user === user);
    return entries.map((entry) => ({ ...entry }));
  }

  clear(): void {
    this.#entries.length = 0;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's entry in the request log (admin mode only). */
    logged: LoggedRequest | null;
  }
}

/** Logs every `/api/` request: at arrival (before auth and faults), then its answer or abort. */
export function logRequests(
  app: FastifyInstance,
  ctx: { auth: Pick<DemoAuth, 'check'>; now: () => number },
  log: RequestLog,
): void {
  app.decorateRequest('logged', null);
  app.addHook('onRequest', (request, reply, done) => {
    const path = request.url.split('?')[0] ?? request.url;
    if (path.startsWith('/api/')) {
      const check = ctx.auth.check(request.headers[HEADER.authorization]);
      const key = request.headers[HEADER.idempotencyKey];
      const referer = request.headers.referer;
      const digest = request.headers[HEADER.contentDigest];
      request.logged = log.arrive({
        at: ctx.now(),
        method: request.method,
        route: request.routeOptions.url ?? path,
        path,
        authorized: request.headers[HEADER.authorization] !== undefined,
        ...(typeof key === 'string' ? { key: key.replaceAll('"', '') } : {}),
        ...(check.kind === 'ok' || check.kind === 'expired' ? { user: check.user } : {}),
        ...(referer === undefined ? {} : { referer }),
        ...(typeof digest === 'string' ? { digest } : {}),
      });
      // Fastify's onRequestAbort only sees a client that left before its body arrived; a
      // request held by the handler ends with the response closing unfinished.
      const logged = request.logged;
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished || logged.status !== undefined) return;
        logged.aborted = true;
        logged.endedAt = ctx.now();
      });
    }
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.logged !== null && request.logged.aborted === undefined) {
      request.logged.status = reply.statusCode;
      request.logged.endedAt = ctx.now();
    }
    done();
  });
}
