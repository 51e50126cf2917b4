import Fastify from 'fastify';
import { kitRewriteUrl, outboxKitPlugin } from 'sw-outbox-server/kit/fastify';
import { kit } from './kit.ts';

// Paths as a URL reads them (`/api/./todos` is `/api/todos`), as the kit reads a batch item's.
const app = Fastify({ rewriteUrl: kitRewriteUrl });
// Each route of the kit becomes a Fastify route whose body Fastify never parses.
await app.register(outboxKitPlugin(kit));
app.get('/api/todos', async () => []); // your reads are your own routes
await app.listen({ port: 3000 });
