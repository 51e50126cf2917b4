import { createOutboxEngine } from 'sw-outbox/sw';
import { importWorkboxQueue, OutboxPlugin, requestsHandler } from 'sw-outbox/workbox';
import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';

declare const self: ServiceWorkerGlobalScope;

const engine = createOutboxEngine({ collections: { requests: requestsHandler() } });
engine.attach(self);
importWorkboxQueue(self, engine, { queueName: 'writes', owner: 'me' }); // what 'writes' holds

// rememberCredentials: replays carry the Authorization of the page's requests (memory only).
const writes = new NetworkOnly({
  plugins: [new OutboxPlugin({ engine, owner: 'me', rememberCredentials: true })],
});
for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const)
  registerRoute(/\/api\//, writes, method);
