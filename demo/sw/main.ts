import { restHandler } from '../../sw/index.ts';
import {
  EVENTS_MESSAGE,
  HOLDER_MESSAGE,
  type HolderInfo,
  isDemoMessage,
  STOP_HOLDER_MESSAGE,
  type StopHolderReply,
} from '../protocol.ts';
import { createEventLog } from './event-log.ts';
import { startHolders } from './holders.ts';
import { cacheAppShell } from './shell-cache.ts';

/**
 * The demo's service worker: the outbox engine for the `notes` collection of the reference
 * server (SPEC §14), the cached app shell, and the demo's own messages (current holder, stop the
 * holder, event history). Credentials come from the page's `setAuth(…, { persist: true })`, so
 * rows keep syncing after every tab has closed and the worker has restarted.
 */

declare const __DEMO_BUILD__: string;

/** Short, so a takeover after a stopped holder is visible within seconds (SPEC §4). */
const LEASE_MS = 5000;

const scope = globalThis as unknown as ServiceWorkerGlobalScope;
const log = createEventLog();

cacheAppShell(scope, __DEMO_BUILD__);

const holders = startHolders(scope, {
  collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
  leaseMs: LEASE_MS,
  // Below the lease: an answer that comes late rarely meets the next holder (SPEC §4).
  requestTimeoutMs: LEASE_MS - 1000,
  backoff: { baseMs: 1000, maxMs: 30_000 },
  onEvent: (event, holderId) => log.push(event, holderId),
});

const info = ({ holderId, generation, startedAt, leaseMs }: HolderInfo): HolderInfo => ({
  holderId,
  generation,
  startedAt,
  leaseMs,
});

scope.addEventListener('message', (event) => {
  if (!isDemoMessage(event.data)) return;
  const source = event.source;
  if (!(source instanceof WindowClient) || new URL(source.url).origin !== scope.location.origin) {
    return;
  }
  const reply = event.ports[0];
  switch (event.data.type) {
    case HOLDER_MESSAGE:
      reply?.postMessage(info(holders.current()));
      return;
    case EVENTS_MESSAGE:
      reply?.postMessage(log.all());
      return;
    case STOP_HOLDER_MESSAGE: {
      const { stopped, current } = holders.stop();
      reply?.postMessage({ stopped, current: info(current) } satisfies StopHolderReply);
      // The stopped holder's rows stay claimed for one lease. Flush again once it has run out, so
      // the takeover does not wait for the next trigger.
      event.waitUntil(
        current.engine
          .flush()
          .then(() => new Promise((resolve) => setTimeout(resolve, LEASE_MS + 250)))
          .then(() => current.engine.flush())
          .then((run) => run.wake),
      );
      return;
    }
  }
});
