import type { FastifyInstance } from 'fastify';
import { ID_PATTERN, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';
import type { AppContext } from '../context.ts';
import { sendProblem } from '../problem.ts';

/**
 * Receipt lookup (SPEC §15): `GET /idempotency/<key>` answers `{ status, body }` of the stored
 * response, scoped to the caller's principal; another principal's key is simply unknown (404).
 * `GET /idempotency` publishes the retention.
 */
export function receiptRoutes(ctx: AppContext, retentionMs: number) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.get('/idempotency', async (_request, reply) => {
      return reply.send({
        retentionSeconds: Math.floor(retentionMs / 1000),
        keyPattern: ID_PATTERN.source,
      });
    });

    app.get('/idempotency/:key', async (request, reply) => {
      const raw = (request.params as { key: string }).key;
      const parsed = parseIdempotencyKey(raw);
      if (parsed.kind !== 'ok')
        return sendProblem(reply, 404, PROBLEM.notFound, { detail: 'no such key' });
      const stored = await ctx.store.lookup(request.principal, parsed.key);
      if (!stored) return sendProblem(reply, 404, PROBLEM.notFound, { detail: 'no such key' });
      // The stored body is JSON text: splice it in instead of parsing and re-serialising it.
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .send(`{"status":${stored.status},"body":${stored.body}}`);
    });
  };
}
