import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM } from 'sw-outbox/wire';
import { z } from 'zod';
import { isLoopback } from '../auth.ts';
import type { AppContext } from '../context.ts';
import { FaultRuleInputSchema } from '../faults.ts';
import { sendProblem } from '../problem.ts';
import { ExpireTokenSchema, issuesOf, OtherDeviceEditSchema, UserQuerySchema } from '../schemas.ts';
import { noteJson } from '../store/port.ts';

const ReleaseSchema = z.strictObject({ user: z.string().min(1).max(64).optional() });

const AddFaultsSchema = z.union([
  FaultRuleInputSchema,
  z.strictObject({ rules: z.array(FaultRuleInputSchema) }),
]);

/**
 * Admin routes for tests and the demo, registered only with `admin: true` (SPEC §15 fault
 * injection). Unauthenticated by design, so they answer loopback peers only (404 to anyone else).
 *
 * - `POST /__faults` — add rules (body: see `FaultRuleInputSchema` in faults.ts) → `{ rules }`
 * - `GET /__faults` → `{ rules }`
 * - `DELETE /__faults` → clears all rules; `DELETE /__faults?user=<name>` only that user's;
 *   `DELETE /__faults/<id>` one rule (404 when it is gone) → `{ removed }`
 * - `POST /__faults/release` `{ user? }` → lets requests held by `delay` rules go now → `{ released }`
 * - `POST /__faults/expire-token` `{ user }` → opens a 401 window until the user logs in again
 * - `POST /__faults/edit` `{ user, id, title?, body? }` → another device bumps the revision
 * - `GET /__stats?user=<name>` → this process's counters and the store's counts
 * - `DELETE /__stats` → resets this process's counters
 * - `GET /__requests?user=<name>` → `{ requests }`: every `/api/` request of that user (all users'
 *   without `user`) in arrival order, with key, referer, status or abort, and every batch request
 *   followed by its items, each logged as its request alone would be (see request-log.ts)
 * - `DELETE /__requests` → empties the request log
 */
export function adminRoutes(ctx: AppContext) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.addHook('onRequest', async (request, reply) => {
      if (!isLoopback(request.socket.remoteAddress))
        return sendProblem(reply, 404, PROBLEM.notFound);
    });

    app.post('/__faults', async (request, reply) => {
      const parsed = AddFaultsSchema.safeParse(request.body);
      if (!parsed.success) {
        return sendProblem(reply, 422, PROBLEM.validationFailed, {
          issues: issuesOf(parsed.error),
        });
      }
      const inputs = 'rules' in parsed.data ? parsed.data.rules : [parsed.data];
      return reply.code(201).send({ rules: ctx.faults.add(inputs) });
    });

    app.get('/__faults', async () => ({ rules: ctx.faults.list() }));

    app.delete('/__faults', async (request, reply) => {
      const user = queryUser(request, reply);
      if (typeof user === 'object') return user;
      return { removed: ctx.faults.clear(user) };
    });

    app.delete('/__faults/:id', async (request, reply) => {
      const id = Number((request.params as { id: string }).id);
      if (!Number.isInteger(id) || !ctx.faults.remove(id))
        return sendProblem(reply, 404, PROBLEM.notFound);
      return { removed: 1 };
    });

    app.post('/__faults/release', async (request, reply) => {
      const parsed = ReleaseSchema.safeParse(request.body ?? {});
      if (!parsed.success) {
        return sendProblem(reply, 422, PROBLEM.validationFailed, {
          issues: issuesOf(parsed.error),
        });
      }
      return { released: ctx.faults.release(parsed.data.user) };
    });

    app.get('/__requests', async (request) => {
      const user = (request.query as { user?: unknown }).user;
      return {
        requests: ctx.requests?.list(typeof user === 'string' && user !== '' ? user : undefined),
      };
    });

    app.delete('/__requests', async () => {
      ctx.requests?.clear();
      return { cleared: true };
    });

    app.post('/__faults/expire-token', async (request, reply) => {
      const parsed = ExpireTokenSchema.safeParse(request.body);
      if (!parsed.success) {
        return sendProblem(reply, 422, PROBLEM.validationFailed, {
          issues: issuesOf(parsed.error),
        });
      }
      ctx.auth.expire(parsed.data.user);
      return { user: parsed.data.user, expired: true };
    });

    // The ledger's expiry sweep run now, as if every entry were past the retention (SPEC §15):
    // what a server that forgot its keys answers. Tests run it on a server of their own.
    app.post('/__faults/forget-keys', async () => {
      const forgotten = await ctx.store.sweepExpired(ctx.now() + 1, 1_000_000);
      return { forgotten };
    });

    app.post('/__faults/edit', async (request, reply) => {
      const parsed = OtherDeviceEditSchema.safeParse(request.body);
      if (!parsed.success) {
        return sendProblem(reply, 422, PROBLEM.validationFailed, {
          issues: issuesOf(parsed.error),
        });
      }
      const { user, id, title, body } = parsed.data;
      const patch = {
        ...(title !== undefined ? { title } : {}),
        ...(body !== undefined ? { body } : {}),
      };
      const note = await ctx.store.editNote(user, id, patch, ctx.now());
      if (!note) return sendProblem(reply, 404, PROBLEM.notFound);
      return reply.header('content-type', 'application/json; charset=utf-8').send(noteJson(note));
    });

    app.get('/__stats', async (request, reply) => {
      const user = queryUser(request, reply);
      if (typeof user === 'object') return user;
      if (user !== undefined) {
        return { user, process: ctx.stats.principal(user), store: await ctx.store.summary(user) };
      }
      return {
        process: ctx.stats.total(),
        inflight: ctx.inflight.size,
        store: await ctx.store.summary(),
      };
    });

    app.delete('/__stats', async () => {
      ctx.stats.reset();
      return { reset: true };
    });
  };
}

/** `?user=<name>`: the name, `undefined` when absent or empty, or the 422 answer already sent. */
function queryUser(
  request: FastifyRequest,
  reply: FastifyReply,
): string | undefined | FastifyReply {
  const query = request.query as { user?: unknown };
  const parsed = UserQuerySchema.safeParse({ user: query.user === '' ? undefined : query.user });
  if (parsed.success) return parsed.data.user;
  return sendProblem(reply, 422, PROBLEM.validationFailed, { issues: issuesOf(parsed.error) });
}
