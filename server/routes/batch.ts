import type { FastifyInstance } from 'fastify';
import { type BatchLimits, HEADER, PROBLEM, readBatchRequest } from 'sw-outbox/wire';
import { runBatch } from '../batch.ts';
import type { AppContext } from '../context.ts';
import { JSON_CONTENT_TYPE_HEADER, sendProblem } from '../problem.ts';
import { dropAnswer } from '../write.ts';
import { type WriteRoute, writeRouter } from '../write-route.ts';

/** Where the batch endpoint is and what it takes. */
export interface BatchRouteOptions extends BatchLimits {
  path: string;
  /** The body limit of a request alone: each item's body has it too. */
  itemBodyLimit: number;
}

/**
 * The batch endpoint (SPEC §15.1): `POST <path>` with `{ "items": [ … ] }`, each item run as the
 * write route it names would run it alone (see server/batch.ts), answered `200 { "items": [ … ] }`
 * in item order. Batch-level answers come before any item runs: 401 and injected 503/429 from
 * the gate, 413 for more than `maxItems` items or a body over `maxBytes`, 400 `batch-malformed`
 * for an envelope that is not one, and 503 when storage is unavailable for the whole batch.
 */
export function batchRoutes(
  ctx: AppContext,
  writes: readonly WriteRoute[],
  options: BatchRouteOptions,
) {
  const route = writeRouter(writes);
  return async function register(app: FastifyInstance): Promise<void> {
    app.post(
      options.path,
      { bodyLimit: options.maxBytes, config: { batch: true } },
      async (request, reply) => {
        const read = readBatchRequest(request.body);
        if (!read.ok)
          return sendProblem(reply, 400, PROBLEM.batchMalformed, { detail: read.detail });
        if (read.items.length > options.maxItems) {
          return sendProblem(reply, 413, PROBLEM.bodyTooLarge, {
            detail: `a batch carries at most ${options.maxItems} items`,
          });
        }
        const principal = request.principal;
        const batchTarget = { method: 'POST', route: options.path, user: principal, batch: true };
        const run = await runBatch(
          { ctx, route, itemBodyLimit: options.itemBodyLimit, batchTarget },
          principal,
          read.items,
          request.log,
        );
        ctx.stats.count(principal, 'batches');
        if (run.drop) return dropAnswer(request, reply);
        if (run.delayAfterMs > 0) await ctx.faults.hold(run.delayAfterMs, principal);
        return reply
          .header('content-type', JSON_CONTENT_TYPE_HEADER)
          .send(JSON.stringify({ items: run.answers }));
      },
    );
  };
}

/**
 * `OPTIONS <path>`, outside auth: 204 with `Allow` and the `Link` that advertises the endpoint
 * and its limits, for a client that asks before sending. A server without batches answers 404.
 */
export function batchProbeRoute(path: string, link: string) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.options(path, async (_request, reply) =>
      reply.code(204).header('allow', 'POST, OPTIONS').header(HEADER.link, link).send(),
    );
  };
}
