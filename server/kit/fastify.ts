import type { FastifyInstance } from 'fastify';
import { handleNodeRequest } from './node-http.ts';
import type { OutboxKit } from './outbox-kit.ts';

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
          // A route of the kit's own shape that the kit still leaves (none today): not found.
          if (!handled) reply.raw.writeHead(404).end();
        },
        handler: async () => undefined,
      });
    }
  };
}
