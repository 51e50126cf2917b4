/**
 * The app shell in the Cache API, so the installed demo opens with no network at all. Shell
 * files are fetched network-first (the server sends them `no-cache` and a new build should show
 * at once) and answered from the cache when the network fails. API, auth and admin requests are
 * never touched: the outbox owns every write, and reads must not be served stale silently.
 */

/** What the page needs to start; precached on install. */
export const SHELL_FILES = [
  '/',
  '/index.html',
  '/app.js',
  '/styles.css',
  '/manifest.webmanifest',
  '/icon.svg',
  '/icon-192.png',
  '/icon-512.png',
] as const;

const PREFIX = 'sw-outbox-demo-shell-';

/** Wires install (precache), activate (drop other builds' caches) and fetch. */
export function cacheAppShell(scope: ServiceWorkerGlobalScope, build: string): void {
  const name = `${PREFIX}${build}`;
  const shell = new Set<string>(SHELL_FILES);

  scope.addEventListener('install', (event) => {
    event.waitUntil(caches.open(name).then((cache) => cache.addAll([...SHELL_FILES])));
  });

  scope.addEventListener('activate', (event) => {
    event.waitUntil(
      caches
        .keys()
        .then((keys) =>
          Promise.all(
            keys
              .filter((key) => key.startsWith(PREFIX) && key !== name)
              .map((key) => caches.delete(key)),
          ),
        ),
    );
  });

  scope.addEventListener('fetch', (event) => {
    const { request } = event;
    const url = new URL(request.url);
    if (request.method !== 'GET' || url.origin !== scope.location.origin) return;
    if (!shell.has(url.pathname)) return;
    // The page is one document: `/` and `/index.html` share one cache entry.
    const key = url.pathname === '/' ? '/index.html' : url.pathname;
    event.respondWith(networkFirst(name, request, key));
  });
}

async function networkFirst(cacheName: string, request: Request, key: string): Promise<Response> {
  try {
    const response = await fetch(request);
    if (response.ok) {
      const copy = response.clone();
      void caches.open(cacheName).then((cache) => cache.put(key, copy));
    }
    return response;
  } catch (error) {
    const cached = await caches.match(key, { cacheName });
    if (cached) return cached;
    throw error;
  }
}
