import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';
import { createOutboxEngine } from '../../sw/index.ts';
import {
  importWorkboxQueue,
  OutboxPlugin,
  requestsHandler,
  type WorkboxImportEvent,
} from '../../sw/workbox/index.ts';

/**
 * The same app after the switch: `OutboxPlugin` in place of `BackgroundSyncPlugin` on the same
 * route, and the import of what the `writes` queue still holds. The script URL names the owner
 * (`owner`) and, for the kill test, the entry after whose row the activation pass stalls
 * (`stall`) so that the test can stop the worker between the two steps of that entry.
 */

const scope = globalThis as unknown as ServiceWorkerGlobalScope & { __e2e?: unknown };
const params = new URL(scope.location.href).searchParams;
const owner = params.get('owner') ?? 'nobody';
const stallAt = params.has('stall') ? Number(params.get('stall')) : undefined;
const events: WorkboxImportEvent[] = [];

let token: Promise<string> | undefined;
/** The demo server's login, made by the worker itself: the rows never stored a credential. */
const login = async () => {
  const response = await fetch('/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: owner }),
  });
  if (!response.ok) throw new Error(`login ${response.status}`);
  return ((await response.json()) as { token: string }).token;
};

const engine = createOutboxEngine({
  collections: { requests: requestsHandler() },
  leaseMs: 3000,
  backoff: { baseMs: 250, maxMs: 2000 },
  auth: async () => {
    token ??= login().catch((error: unknown) => {
      token = undefined;
      throw error;
    });
    return { authorization: `Bearer ${await token}` };
  },
});
engine.attach(scope);

let imported = 0;
importWorkboxQueue(scope, engine, {
  queueName: 'writes',
  owner,
  onEvent(event) {
    events.push(event);
    if (event.type !== 'imported' || event.trigger !== 'activate') return;
    imported++;
    // Stuck between the steps of this entry: its row is durable, its Workbox entry still there.
    if (imported !== stallAt) return;
    // Busy for a minute (the test stops the worker long before): nothing else runs meanwhile.
    const until = Date.now() + 60_000;
    while (Date.now() < until) scope.__e2e = { events, stalled: true };
  },
});

// Counted before the route runs, so a test knows a write reached the worker.
let writesSeen = 0;
scope.addEventListener('fetch', (event) => {
  if (event.request.method === 'POST' && new URL(event.request.url).pathname === '/api/notes') {
    writesSeen++;
    scope.__e2e = { events, writesSeen };
  }
});

registerRoute(
  ({ url }) => url.pathname === '/api/notes',
  new NetworkOnly({ plugins: [new OutboxPlugin({ engine, owner })] }),
  'POST',
);

scope.__e2e = { events };
