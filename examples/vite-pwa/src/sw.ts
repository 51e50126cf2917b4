import { createOutboxEngine, restHandler } from 'sw-outbox/sw';
import {
  cleanupOutdatedCaches,
  createHandlerBoundToURL,
  precacheAndRoute,
} from 'workbox-precaching';
import { NavigationRoute, registerRoute } from 'workbox-routing';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Array<string | { url: string }> };

// The app shell, from the list vite-plugin-pwa injects: every built file in a build, only
// `index.html` in `vite dev` (devOptions.navigateFallback). The app opens offline.
precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();
registerRoute(new NavigationRoute(createHandlerBoundToURL('index.html')));

// The outbox: every change the page enqueues is sent from here, with or without a tab open.
createOutboxEngine({
  collections: { todos: restHandler({ baseUrl: '/api/todos' }) },
}).attach(self);
