import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type BatchItem, HEADER } from 'sw-outbox/wire';
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
  /** A batch request (SPEC §15.1): how many items it carried. */
  items?: number;
  /**
   * An item of a batch: the `seq` of the batch request it came in. Each item is logged as its
   * request alone would be, right after its batch, with the item's own answer.
   */
  batch?: number;
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

/**
 * Logs every `/api/` request and every batch request with its items: at arrival (before auth and
 * faults), then its answer or abort.
 */
export function logRequests(
  app: FastifyInstance,
  ctx: { auth: Pick<DemoAuth, 'check'>; now: () => number },
  log: RequestLog,
): (request: FastifyRequest, items: readonly BatchItem[]) => void {
  app.decorateRequest('logged', null);
  /** The entries of a batch request's items, once its body was read. */
  const items = new WeakMap<object, LoggedRequest[]>();
  const isBatch = (request: { routeOptions: { config?: { batch?: boolean } } }) =>
    request.routeOptions.config?.batch === true;
  app.addHook('onRequest', (request, reply, done) => {
    const path = request.url.split('?')[0] ?? request.url;
    if (path.startsWith('/api/') || isBatch(request)) {
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
        for (const entry of [logged, ...(items.get(request) ?? [])]) {
          entry.aborted = true;
          entry.endedAt = ctx.now();
        }
      });
    }
    done();
  });
  app.addHook('onSend', (request, _reply, payload, done) => {
    const entries = items.get(request);
    if (entries !== undefined && typeof payload === 'string') {
      try {
        const answers = (JSON.parse(payload) as { items?: { status?: number }[] }).items ?? [];
        entries.forEach((entry, i) => {
          const status = answers[i]?.status;
          if (typeof status === 'number') {
            entry.status = status;
            entry.endedAt = ctx.now();
          }
        });
      } catch {
        // Not an answer per item (a batch-level problem): the items have none of their own.
      }
    }
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (request.logged !== null && request.logged.aborted === undefined) {
      // A batch-level answer (401, 413, 503) is every item's.
      for (const entry of [request.logged, ...(items.get(request) ?? [])]) {
        entry.status ??= reply.statusCode;
        entry.endedAt ??= ctx.now();
      }
    }
    done();
  });
  /** A batch's items, logged once the kit has read its envelope (server/reference-kit.ts). */
  return function logBatchItems(request, read) {
    const batch = request.logged;
    if (batch === null || !isBatch(request)) return;
    batch.items = read.length;
    const { seq, key: _key, digest: _digest, items: _items, ...from } = batch;
    items.set(
      request,
      read.map((item) => {
        const key = item.headers[HEADER.idempotencyKey];
        const digest = item.headers[HEADER.contentDigest];
        return log.arrive({
          ...from,
          method: item.method,
          route: item.path,
          path: item.path.split('?')[0] ?? item.path,
          batch: seq,
          ...(key === undefined ? {} : { key: key.replaceAll('"', '') }),
          ...(digest === undefined ? {} : { digest }),
        });
      }),
    );
  };
}
