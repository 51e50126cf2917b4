import { BackgroundSyncPlugin } from 'workbox-background-sync';
import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';

/**
 * The app before the switch: Workbox's `BackgroundSyncPlugin` on its write route, as the
 * Workbox documentation shows it. A write that fails goes into the `writes` queue.
 */

const scope = globalThis as unknown as ServiceWorkerGlobalScope;
scope.addEventListener('install', (event) => event.waitUntil(scope.skipWaiting()));
scope.addEventListener('activate', (event) => event.waitUntil(scope.clients.claim()));

registerRoute(
  ({ url }) => url.pathname === '/api/notes',
  new NetworkOnly({ plugins: [new BackgroundSyncPlugin('writes')] }),
  'POST',
);
