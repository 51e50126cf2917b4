import type { RequestHandler } from 'express';
import { handleNodeRequest } from './node-http.ts';
import type { OutboxKit } from './outbox-kit.ts';

/**
 * The kit as Express 5 middleware (`sw-outbox-server/kit/express`): `app.use(outboxKitRouter(kit))`
 * before any body parser (`express.json()` would read the body the kit must read itself, after
 * check 1). The kit answers its own requests and calls `next()` for every other one. Paths are
 * matched as the client sent them (`originalUrl`), so register the kit's routes with their
 * full paths wherever the middleware is mounted.
 */
export function outboxKitRouter<Tx>(kit: OutboxKit<Tx>): RequestHandler {
  return function outboxKit(request, response, next) {
    handleNodeRequest(kit, request, response, request.originalUrl).then((handled) => {
      if (!handled) next();
    }, next);
  };
}
