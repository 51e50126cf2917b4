import { BackgroundSyncPlugin } from 'workbox-background-sync';
import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';

const writes = new NetworkOnly({ plugins: [new BackgroundSyncPlugin('writes')] });
for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const)
  registerRoute(/\/api\//, writes, method);
