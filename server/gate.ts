import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { HEADER, PROBLEM } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { sendProblem } from './problem.ts';

const CHALLENGE = 'Bearer realm="sw-outbox"';

/**
 * The `onRequest` gate of every protected route, in front of the ledger (SPEC §15): injected
 * 503/429 bursts first, then auth (401 with `WWW-Authenticate`). Neither touches the ledger, so
 * nothing is stored for 401, 429 or 503 and the same key works once the client recovers.
 * Callback style because nothing here awaits: it runs on every request and a promise per
 * request is measurable. An early answer is sent without calling `done`.
 */
export function gate(ctx: AppContext) {
  return function gateHook(
    request: FastifyRequest,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ) {
    const check = ctx.auth.check(request.headers[HEADER.authorization]);
    if (ctx.faults.active) {
      const user = check.kind === 'ok' || check.kind === 'expired' ? check.user : undefined;
      const target = {
        method: request.method,
        route: request.routeOptions.url ?? request.url,
        user,
      };
      const burst = ctx.faults.take('unavailable', target);
      if (burst) {
        reply.header(HEADER.retryAfter, String(burst.retryAfter));
        if (burst.status === 429) sendProblem(reply, 429, PROBLEM.tooManyRequests);
        else sendProblem(reply, 503, PROBLEM.unavailable, { detail: 'injected fault' });
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
    } else {
      const error = check.kind === 'invalid' ? ', error="invalid_token"' : '';
      reply.header(HEADER.wwwAuthenticate, `${CHALLENGE}${error}`);
      sendProblem(reply, 401, PROBLEM.authRequired);
    }
  };
}
