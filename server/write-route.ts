import type { FastifyInstance } from 'fastify';
import { PROBLEM } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { MAX_PARAM_LENGTH } from './error-handler.ts';
import { checkBeforeBodyHook, type WriteRequest } from './idempotency.ts';
import { type Answer, problemAnswer, sendAnswer } from './problem.ts';
import type { WriteIntent } from './store/port.ts';
import { runWrite } from './write.ts';

/** What a write route makes of a request: the write it asks for, or the answer refusing it. */
export type IntentResult = { ok: true; intent: WriteIntent } | { ok: false; answer: Answer };

/** What a write route reads of a request, alone or as a batch item. */
export interface WriteInput {
  /** Path parameters, decoded. */
  params: Record<string, string>;
  /** The parsed JSON body, `undefined` when there is none. */
  body: unknown;
  headers: WriteRequest['headers'];
}

/**
 * A write route of the API, described once: it is registered as a route of its own and it
 * routes the items of a batch (SPEC §15.1), so both run the same validation and the same three
 * checks.
 */
export interface WriteRoute {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A Fastify route pattern of static segments and `:name` parameters, e.g. `/api/notes/:id`. */
  url: string;
  intent(input: WriteInput): IntentResult;
}

/** Registers write routes: check 1 before the body is read, then the route's intent and the write. */
export function registerWriteRoutes(
  app: FastifyInstance,
  ctx: AppContext,
  routes: readonly WriteRoute[],
): void {
  const onRequest = checkBeforeBodyHook(ctx);
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.url,
      onRequest,
      handler: async (request, reply) => {
        const params = request.params as Record<string, string>;
        const result = route.intent({ params, body: request.body, headers: request.headers });
        if (!result.ok) return sendAnswer(reply, result.answer);
        return runWrite(ctx, request, reply, result.intent);
      },
    });
  }
}

/** A batch item's route: the route and its decoded parameters, or the answer refusing the path. */
export type RouteMatch =
  | { ok: true; route: WriteRoute; params: Record<string, string> }
  | { ok: false; answer: Answer };

/**
 * Routes batch items to write routes as Fastify routes a request alone: the query is ignored,
 * segments compare exactly (case included), a parameter is one segment (possibly empty, then
 * refused by validation), percent-decoded, at most {@link MAX_PARAM_LENGTH} characters as sent
 * (414), and a path that is not valid percent-encoding is 400. Anything else is 404.
 */
export function writeRouter(
  routes: readonly WriteRoute[],
): (method: string, path: string) => RouteMatch {
  const compiled = routes.map((route) => ({ route, segments: route.url.split('/') }));
  return function match(method, target) {
    const query = target.indexOf('?');
    const path = query === -1 ? target : target.slice(0, query);
    if (path.includes('%') && !decodes(path)) {
      return {
        ok: false,
        answer: problemAnswer(400, PROBLEM.badRequest, {
          detail: 'the path is not valid percent-encoding',
        }),
      };
    }
    const segments = path.split('/');
    for (const { route, segments: pattern } of compiled) {
      if (route.method !== method || pattern.length !== segments.length) continue;
      const params: Record<string, string> = {};
      let matched = true;
      for (let i = 0; i < pattern.length && matched; i++) {
        const expected = pattern[i]!;
        const actual = segments[i]!;
        if (expected.startsWith(':')) {
          if (actual.length > MAX_PARAM_LENGTH) {
            return {
              ok: false,
              answer: problemAnswer(414, PROBLEM.uriTooLong, {
                detail: `a path segment may be at most ${MAX_PARAM_LENGTH} characters`,
              }),
            };
          }
          params[expected.slice(1)] = decodeURIComponent(actual);
        } else matched = expected === actual;
      }
      if (matched) return { ok: true, route, params };
    }
    return { ok: false, answer: problemAnswer(404, PROBLEM.notFound) };
  };
}

function decodes(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}
