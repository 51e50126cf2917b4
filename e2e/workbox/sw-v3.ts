import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';
import { createOutboxEngine } from '../../sw/index.ts';
import { importWorkboxQueue, OutboxPlugin, requestsHandler } from '../../sw/workbox/index.ts';

/**
 * The switch exactly as `docs/switching-from-workbox.md` writes it, for an API that needs a
 * bearer token: no `auth` hook, no page code — `rememberCredentials` alone. Only the owner comes
 * from the script URL (`owner`), where the guide writes a literal.
 */

declare const self: ServiceWorkerGlobalScope;
const owner = new URL(self.location.href).searchParams.get('owner') ?? 'nobody';

const engine = createOutboxEngine({ collections: { requests: requestsHandler() } });
engine.attach(self);
importWorkboxQueue(self, engine, { queueName: 'writes', owner }); // what 'writes' holds

// rememberCredentials: replays carry the Authorization of the page's requests (memory only).
const writes = new NetworkOnly({
  plugins: [new OutboxPlugin({ engine, owner, rememberCredentials: true })],
});
for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const)
  registerRoute(/\/api\//, writes, method);
