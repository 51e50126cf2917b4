import type { FastifyInstance } from 'fastify';
import { PROBLEM } from 'sw-outbox/wire';
import { isLoopback } from '../auth.ts';
import type { AppContext } from '../context.ts';
import { LOOPBACK_ONLY_DETAIL } from '../gate.ts';
import { sendProblem } from '../problem.ts';
import { issuesOf, LoginSchema } from '../schemas.ts';

/** Demo auth (SPEC §15): `POST /auth/login { user }` → `{ token }`; no password, demo only. */
export function loginRoutes(ctx: AppContext) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/auth/login', async (request, reply) => {
      if (ctx.loopbackAuthOnly && !isLoopback(request.socket.remoteAddress)) {
        return sendProblem(reply, 403, PROBLEM.forbidden, { detail: LOOPBACK_ONLY_DETAIL });
      }
      const parsed = LoginSchema.safeParse(request.body);
      if (!parsed.success) {
        return sendProblem(reply, 422, PROBLEM.validationFailed, {
          issues: issuesOf(parsed.error),
        });
      }
      return { token: ctx.auth.issue(parsed.data.user), user: parsed.data.user };
    });
  };
}
