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

/** Where the gate sees a request: the route pattern, and whether it is the batch request. */
export interface GateTarget {
  method: string;
  route: string;
  batch: boolean;
}

/**
 * The verdict on a request in front of the ledger (SPEC §15): injected 503/429 bursts, then auth
 * (401 with `WWW-Authenticate`). Bursts and auth never touch the ledger, so nothing is stored
 * for 401, 429 or 503 and the same key works once the client recovers. The principal, or the
 * answer that refuses the request. Synchronous unless an app's own `authenticate` returns a
 * promise: it runs on every request and a promise per request is measurable.
 */
export function admission(
  ctx: AppContext,
  request: FastifyRequest,
  target: GateTarget,
): string | Answer | Promise<string | Answer> {
  const check = checkAuth(ctx, request);
  if (check instanceof Promise) return check.then((settled) => verdict(ctx, settled, target));
  return verdict(ctx, check, target);
}

function verdict(ctx: AppContext, check: GateCheck, target: GateTarget): string | Answer {
  if (ctx.faults.active) {
    const user = check.kind === 'ok' || check.kind === 'expired' ? check.user : undefined;
    const burst = ctx.faults.take('unavailable', { ...target, user });
    if (burst) return burstAnswer(burst);
  }
  if (check.kind === 'ok') return check.user;
  if (check.kind === 'expired') {
    const challenge = `${CHALLENGE}, error="invalid_token", error_description="expired"`;
    return problemAnswer(
      401,
      PROBLEM.tokenExpired,
      { detail: 'log in again' },
      { [HEADER.wwwAuthenticate]: challenge },
    );
  }
  if (check.kind === 'remote') {
    return problemAnswer(
      401,
      PROBLEM.authRequired,
      { detail: LOOPBACK_ONLY_DETAIL },
      { [HEADER.wwwAuthenticate]: CHALLENGE },
    );
  }
  const error = check.kind === 'invalid' ? ', error="invalid_token"' : '';
  return problemAnswer(
    401,
    PROBLEM.authRequired,
    {},
    {
      [HEADER.wwwAuthenticate]: `${CHALLENGE}${error}`,
    },
  );
}

/**
 * The `onRequest` gate of the protected routes the kit does not answer (the reads of
 * `/api/notes`): the `Link` that advertises the batch endpoint (SPEC §15.1) on every answer, then
 * {@link admission}. An early answer is sent without calling `done`.
 */
export function gate(ctx: AppContext) {
  return function gateHook(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ) {
    if (ctx.batchLink !== undefined) reply.header(HEADER.link, ctx.batchLink);
    const target = {
      method: request.method,
      route: request.routeOptions.url ?? request.url,
      batch: false,
    };
    const settle = (result: string | Answer) => {
      if (typeof result === 'string') {
        request.principal = result;
        done();
      } else sendAnswer(reply, result);
    };
    const result = admission(ctx, request, target);
    if (result instanceof Promise) {
      result.then(settle, (error: unknown) => {
        request.log.error({ err: error }, 'authenticate threw');
        sendProblem(reply, 503, PROBLEM.unavailable, { detail: 'authentication failed' });
      });
      return;
    }
    settle(result);
  };
}
