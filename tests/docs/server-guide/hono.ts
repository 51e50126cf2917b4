import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { outboxKitMiddleware } from 'sw-outbox-server/kit/hono';
import { kit } from './kit.ts';

const app = new Hono();
// Before any route that reads the body: the kit answers its own requests, passes the rest on.
app.use(outboxKitMiddleware(kit));
app.get('/api/todos', (c) => c.json([])); // your reads are your own routes

// Node. On Bun and Workers: `export default app`; on Deno: `Deno.serve(app.fetch)`.
serve({ fetch: app.fetch, port: 3000 });
