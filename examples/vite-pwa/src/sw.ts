import { createOutboxEngine, restHandler } from 'sw-outbox/sw';
import {
  cleanupOutdatedCaches,
  createHandlerBoundToURL,
  precacheAndRoute,
} from 'workbox-precaching';
import { NavigationRoute, registerRoute } from 'workbox-routing';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Array<string | { url: string }> };

// The app shell, from the list vite-plugin-pwa injects at build time: the app opens offline.
precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();
registerRoute(new NavigationRoute(createHandlerBoundToURL('index.html')));

// The outbox: every change the page enqueues is sent from here, with or without a tab open.
createOutboxEngine({
  collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
}).attach(self);
