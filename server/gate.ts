import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { HEADER, PROBLEM } from 'sw-outbox/wire';
import { isLoopback, type TokenCheck } from './auth.ts';
import type { AppContext } from './context.ts';
import type { FaultRule } from './faults.ts';
import { type Answer, problemAnswer, sendAnswer, sendProblem } from './problem.ts';

const CHALLENGE = 'Bearer realm="sw-outbox"';

/** Why a client beyond loopback is refused while the server signs with the demo secret. */
export const LOOPBACK_ONLY_DETAIL =
  'this server signs tokens with the public demo secret, which is accepted from loopback clients only; set an auth secret';

type GateCheck = TokenCheck | { kind: 'remote' };

/**
 * The auth check of a request: the app's own `authenticate` hook when it has one; else the demo
 * token's, or a refusal for a peer beyond loopback while the demo secret is public.
 */
function checkAuth(ctx: AppContext, request: FastifyRequest): GateCheck | Promise<GateCheck> {
  if (ctx.authenticate) return ctx.authenticate(request);
  if (ctx.loopbackAuthOnly && !isLoopback(request.socket.remoteAddress)) return { kind: 'remote' };
  return ctx.auth.check(request.headers[HEADER.authorization]);
}

/**
 * The answer to a request an injected `unavailable` burst refuses, before auth and the ledger:
 * 503 or 429 with `Retry-After`. Also what a batch item the burst selects gets (SPEC §15.1).
 */
export function burstAnswer(rule: Extract<FaultRule, { kind: 'unavailable' }>): Answer {
  const headers = { [HEADER.retryAfter]: String(rule.retryAfter) };
  return rule.status === 429
    ? problemAnswer(429, PROBLEM.tooManyRequests, {}, headers)
    : problemAnswer(503, PROBLEM.unavailable, { detail: 'injected fault' }, headers);
}

/**
 * The `onRequest` gate of every protected route, in front of the ledger (SPEC §15): the `Link`
 * that advertises the batch endpoint (SPEC §15.1) on every answer, injected 503/429 bursts, then
 * auth (401 with `WWW-Authenticate`). Bursts and auth never touch the ledger, so nothing is
 * stored for 401, 429 or 503 and the same key works once the client recovers.
 * Callback style, and synchronous unless an app's own `authenticate` returns a promise: it runs
 * on every request and a promise per request is measurable. An early answer is sent without
 * calling `done`.
 */
export function gate(ctx: AppContext) {
  return function gateHook(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ) {
    if (ctx.batchLink !== undefined) reply.header(HEADER.link, ctx.batchLink);
    const check = checkAuth(ctx, request);
    if (check instanceof Promise) {
      check.then(
        (settled) => pass(settled, request, reply, done),
        (error: unknown) => {
          request.log.error({ err: error }, 'authenticate threw');
          sendProblem(reply, 503, PROBLEM.unavailable, { detail: 'authentication failed' });
        },
      );
      return;
    }
    pass(check, request, reply, done);
  };

  function pass(
    check: GateCheck,
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    if (ctx.faults.active) {
      const user = check.kind === 'ok' || check.kind === 'expired' ? check.user : undefined;
      const target = {
        method: request.method,
        route: request.routeOptions.url ?? request.url,
        user,
        batch: request.routeOptions.config.batch === true,
      };
      const burst = ctx.faults.take('unavailable', target);
      if (burst) {
        sendAnswer(reply, burstAnswer(burst));
        return;
      }
    }
    if (check.kind === 'ok') {
      request.principal = check.user;
      done();
    } else if (check.kind === 'expired') {
      reply.header(
        HEADER.wwwAuthenticate,
        `${CHALLENGE}, error="invalid_token", error_description="expired"`,
      );
      sendProblem(reply, 401, PROBLEM.tokenExpired, { detail: 'log in again' });
    } else if (check.kind === 'remote') {
      reply.header(HEADER.wwwAuthenticate, CHALLENGE);
      sendProblem(reply, 401, PROBLEM.authRequired, { detail: LOOPBACK_ONLY_DETAIL });
    } else {
      const error = check.kind === 'invalid' ? ', error="invalid_token"' : '';
      reply.header(HEADER.wwwAuthenticate, `${CHALLENGE}${error}`);
      sendProblem(reply, 401, PROBLEM.authRequired);
    }
  }
}
