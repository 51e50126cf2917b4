import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type BatchItem, type BatchLimits, PROBLEM } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import type { FaultTarget } from './faults.ts';
import { admission, burstAnswer } from './gate.ts';
import type { KitCommitPhase, KitTarget, KitWriteTarget } from './kit/hooks.ts';
import { toFetchRequest } from './kit/node-http.ts';
import { createOutboxKit, type OutboxKit } from './kit/outbox-kit.ts';
import { type Answer, problemAnswer, sendAnswer } from './problem.ts';
import { noteWriteRoutes, type StoreRoute } from './routes/notes.ts';
import type { DocumentIntent } from './store/documents.ts';

/** Options of {@link referenceKit}. */
export interface ReferenceKitOptions {
  bodyLimit: number;
  retentionMs: number;
  batch: (BatchLimits & { path: string }) | undefined;
  /** More write routes beside the notes' (the schemaless collections). */
  routes?: ReadonlyArray<StoreRoute<DocumentIntent>>;
  /** Told of a batch's items once its envelope is read (the request log). */
  batchRead?(request: FastifyRequest, items: readonly BatchItem[]): void;
}

/**
 * The reference server's writes are the kit's (SPEC §22.1): the notes' write routes, the receipt
 * lookup and the batch endpoint are a kit over the store's ledger, put into Fastify by
 * {@link kitRoutes}. What the reference server adds lives in the kit's hooks: its auth and
 * injected bursts (`authenticate`, `admitItem`), delays and lost answers around the commit
 * (`commit`), counters (`stats`) and the request log (`batchRead`). So the demo, the e2e suites
 * and the browser tests exercise the kit itself.
 */
export function referenceKit(
  ctx: AppContext,
  options: ReferenceKitOptions,
): { kit: OutboxKit<unknown>; routes: (app: FastifyInstance) => Promise<void> } {
  /** The Fastify request a Fetch API request of the kit was made from. */
  const origins = new WeakMap<Request, FastifyRequest>();
  const kit = createOutboxKit<unknown>({
    ledger: ctx.store.ledger,
    authenticate(request, target) {
      const origin = origins.get(request)!;
      const result = admission(ctx, origin, target);
      const settle = (settled: string | Answer) => {
        if (typeof settled === 'string') origin.principal = settled;
        return settled;
      };
      return result instanceof Promise ? result.then(settle) : settle(result);
    },
    retentionMs: options.retentionMs,
    bodyLimit: options.bodyLimit,
    batch: options.batch ?? false,
    now: ctx.now,
    stats: ctx.stats,
    onError: (error) => console.error(error),
    hooks: {
      admitItem(item) {
        if (!ctx.faults.active) return undefined;
        const burst = ctx.faults.take('unavailable', faultTarget(item));
        return burst && burstAnswer(burst);
      },
      commit: (writes, batch) => (ctx.faults.active ? faultsAround(ctx, writes, batch) : undefined),
      batchRead(request, items) {
        const origin = origins.get(request);
        if (origin) options.batchRead?.(origin, items);
      },
    },
  });
  for (const route of noteWriteRoutes(ctx)) kit.route(route);
  for (const route of options.routes ?? []) kit.route(route);
  const batchPath = options.batch?.path;
  return { kit, routes: kitRoutes(kit, origins, batchPath) };
}

/** A write of the kit as fault rules see it. */
function faultTarget(write: Pick<KitWriteTarget, 'method' | 'route' | 'principal'>): FaultTarget {
  return { method: write.method, route: write.route, user: write.principal };
}

/**
 * The fault rules around one request's writes (server/faults.ts): `delay` rules of its writes
 * and of the batch hold the writes (before-commit: the longest, with every key in progress) or
 * the answer (after-commit); `drop-after-commit` on an applied write, or on a batch with an
 * applied write, loses the whole answer after the commit.
 */
function faultsAround(
  ctx: AppContext,
  writes: readonly KitWriteTarget[],
  batch: KitTarget | undefined,
): KitCommitPhase {
  const user = writes[0]?.principal;
  const batchTarget = batch && { ...batch, user };
  let beforeMs = 0;
  let afterMs = 0;
  for (const target of [...writes.map(faultTarget), ...(batchTarget ? [batchTarget] : [])]) {
    const rule = ctx.faults.take('delay', target);
    if (rule?.phase === 'before-commit') beforeMs = Math.max(beforeMs, rule.ms);
    else if (rule) afterMs = Math.max(afterMs, rule.ms);
  }
  return {
    before: () => (beforeMs > 0 ? ctx.faults.hold(beforeMs, user) : undefined),
    async after(applied) {
      const drop =
        applied.some((write) => ctx.faults.take('drop-after-commit', faultTarget(write))) ||
        (batchTarget !== undefined && ctx.faults.take('drop-after-commit', batchTarget));
      if (drop) return 'drop';
      if (afterMs > 0) await ctx.faults.hold(afterMs, user);
      return undefined;
    },
  };
}

/**
 * Every route of the kit as a Fastify route whose `onRequest` hands the request to the kit, which
 * reads the body itself after check 1, and sends its answer through the reply, so the app's
 * hooks (CORS, the request log, the retention header) see it as any other. A lost answer
 * (`Response.error()`, a fault) destroys the connection.
 */
function kitRoutes(
  kit: OutboxKit<unknown>,
  origins: WeakMap<Request, FastifyRequest>,
  batchPath: string | undefined,
) {
  return async function register(app: FastifyInstance): Promise<void> {
    for (const { method, path } of kit.endpoints()) {
      app.route({
        method,
        url: path,
        config: { batch: path === batchPath && method === 'POST' },
        onRequest: (request, reply) => answerWithKit(kit, origins, request, reply),
        handler: async () => undefined,
      });
    }
  };
}

async function answerWithKit(
  kit: OutboxKit<unknown>,
  origins: WeakMap<Request, FastifyRequest>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const fetchRequest = toFetchRequest(request.raw);
  if (!fetchRequest) {
    return sendAnswer(
      reply,
      problemAnswer(400, PROBLEM.badRequest, { detail: 'the request headers cannot be read' }),
    );
  }
  origins.set(fetchRequest, request);
  const answer = await kit.answer(fetchRequest);
  if (!answer) return sendAnswer(reply, problemAnswer(404, PROBLEM.notFound));
  if (answer === 'drop') {
    reply.hijack();
    request.raw.socket.destroy();
    return reply;
  }
  reply.code(answer.status).headers(answer.headers);
  return answer.body === '' ? reply.send() : reply.send(answer.body);
}
