import Fastify from 'fastify';
import { outboxKitPlugin } from 'sw-outbox-server/kit/fastify';
import { kit } from './kit.ts';

const app = Fastify();
// Each route of the kit becomes a Fastify route whose body Fastify never parses.
await app.register(outboxKitPlugin(kit));
app.get('/api/todos', async () => []); // your reads are your own routes
await app.listen({ port: 3000 });
