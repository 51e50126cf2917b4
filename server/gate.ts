import type { FastifyReply, FastifyRequest } from 'fastify';
import { HEADER, PROBLEM } from '../shared/wire.ts';
import type { AppContext } from './context.ts';
import { sendProblem } from './problem.ts';

const CHALLENGE = 'Bearer realm="sw-outbox"';

/**
 * The `onRequest` gate of every protected route, in front of the ledger (SPEC §15): injected
 * 503/429 bursts first, then auth (401 with `WWW-Authenticate`). Neither touches the ledger, so
 * nothing is stored for 401, 429 or 503 and the same key works once the client recovers.
 */
export function gate(ctx: AppContext) {
  return async function gateHook(request: FastifyRequest, reply: FastifyReply) {
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
        return burst.status === 429
          ? sendProblem(reply, 429, PROBLEM.tooManyRequests)
          : sendProblem(reply, 503, PROBLEM.unavailable, { detail: 'injected fault' });
      }
    }
    if (check.kind === 'ok') {
      request.principal = check.user;
      return;
    }
    if (check.kind === 'expired') {
      reply.header(
        HEADER.wwwAuthenticate,
        `${CHALLENGE}, error="invalid_token", error_description="expired"`,
      );
      return sendProblem(reply, 401, PROBLEM.tokenExpired, { detail: 'log in again' });
    }
    const error = check.kind === 'invalid' ? ', error="invalid_token"' : '';
    reply.header(HEADER.wwwAuthenticate, `${CHALLENGE}${error}`);
    return sendProblem(reply, 401, PROBLEM.authRequired);
  };
}
