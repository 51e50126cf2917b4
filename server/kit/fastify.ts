import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { PROBLEM } from 'sw-outbox/wire';
import { problemAnswer } from '../problem.ts';
import { handleNodeRequest, sendAnswer } from './node-http.ts';
import type { OutboxKit } from './outbox-kit.ts';
import { normalizedTarget } from './request-target.ts';

/**
 * Fastify's `rewriteUrl` for an app that serves the kit: `Fastify({ rewriteUrl: kitRewriteUrl })`.
 * Fastify's router matches a path as sent, where a batch item's path is read as a URL reads it
 * (`/api/./todos` is `/api/todos`, SPEC §15.1); with it, a request alone reaches the route its
 * item does.
 */
export function kitRewriteUrl(request: IncomingMessage): string {
  return normalizedTarget(request.url ?? '/');
}

/**
 * The kit as a Fastify 5 plugin (`sw-outbox-server/kit/fastify`):
 * `await app.register(outboxKitPlugin(kit))`. Every method and path the kit answers becomes a
 * route whose `onRequest` hook hands the raw request to the kit and takes the reply over, so the
 * body is read by the kit, after check 1, and never by Fastify's parsers. Fastify's own refusals
 * before routing (a segment over `maxParamLength`, a path it cannot decode) stay Fastify's; an
 * app wants its `frameworkErrors` to answer them as problems, as the reference server does.
 */
export function outboxKitPlugin<Tx>(kit: OutboxKit<Tx>) {
  return async function outboxKit(app: FastifyInstance): Promise<void> {
    for (const { method, path } of kit.endpoints()) {
      app.route({
        method,
        url: path,
        async onRequest(request, reply) {
          reply.hijack();
          const handled = await handleNodeRequest(kit, request.raw, reply.raw);
          // A route of the kit's shape whose path the kit does not match (Fastify's router
          // decodes `%74odos` to `todos`; the kit matches a path as sent): not found, as a
          // problem, as the same item in a batch is answered.
          if (!handled) sendAnswer(problemAnswer(404, PROBLEM.notFound), reply.raw);
        },
        handler: async () => undefined,
      });
    }
  };
}
