import type { MiddlewareHandler } from 'hono';
import type { OutboxKit } from './outbox-kit.ts';

/**
 * The kit as Hono middleware (`sw-outbox-server/kit/hono`): the kit answers its own requests (the
 * registered writes, the receipt lookup, the batch endpoint) from `c.req.raw`, and passes every
 * other request on to the app's routes. Register it before anything that reads the body.
 *
 * Hono runs on the Fetch API, so the same app serves Node (`@hono/node-server`), Bun, Deno and
 * Cloudflare Workers; a Next.js route handler needs no Hono at all:
 * `export async function POST(request: Request) { return kit.fetch(request); }`.
 */
export function outboxKitMiddleware<Tx>(kit: OutboxKit<Tx>): MiddlewareHandler {
  return async function outboxKit(c, next) {
    const answer = await kit.handle(c.req.raw);
    if (answer) return answer;
    await next();
  };
}
