import { createOutboxEngine, type EngineEvent, restHandler } from '../../sw/index.ts';

/**
 * The e2e service worker: the `notes` collection of the reference server through `restHandler`.
 * Its script URL tunes it: `lease` (ms), `timeout` (per attempt, ms), `version` (a new value is a
 * worker update), `sync=none` (a browser without Background Sync, as Firefox and Safari are),
 * `heartbeat` (ms, see below), a clock a test may move ahead (below), `batch` (`off` sends every row alone; a path is the configured
 * batch endpoint; unset, the one the server advertises), `stall` (the watchdog's bound, ms),
 * `throw` (the script throws as it first runs), `install=fail` (its install event rejects), `backoff=default` (the engine's backoff instead of the suite's short one). Every engine event is kept in `self.__e2e.events` and broadcast on
 * `e2e-events`, tagged with this worker start's holder id, so tests can read an event log.
 */

const scope = globalThis as unknown as ServiceWorkerGlobalScope & { __e2e?: unknown };
const params = new URL(scope.location.href).searchParams;
// `throw`: a worker whose first run throws, as one with a bug in its setup does.
if (params.has('throw')) throw new Error(`the worker's setup failed: ${params.get('throw')}`);
// `install=fail`: a worker whose install event rejects, as one whose precache misses a file does.
if (params.get('install') === 'fail') {
  scope.addEventListener('install', (event) => {
    event.waitUntil(Promise.reject(new Error('a precached file did not load')));
  });
}
const leaseMs = Number(params.get('lease') ?? 1500);
const version = params.get('version') ?? '1';
const channel = new BroadcastChannel('e2e-events');
if (params.get('sync') === 'none') withoutBackgroundSync();
const events: Array<EngineEvent & { holder: string; version: string; at: number }> = [];

// The worker's clock, which a test may move ahead (`e2e-control`, `{ type: 'clock', aheadMs }`):
// a device that slept for days, as the retention rule of SPEC §15 reads it. And `{ type:
// 'release-wake' }`: the worker's wake-up timer goes the way an update found releases it (a lost
// timer, SPEC §23), in browsers where a test cannot run code inside the worker.
let aheadMs = 0;
new BroadcastChannel('e2e-control').onmessage = (event: MessageEvent) => {
  const data = event.data as { type?: string; aheadMs?: number };
  if (data.type === 'clock' && typeof data.aheadMs === 'number') aheadMs = data.aheadMs;
  if (data.type === 'release-wake') scope.registration.dispatchEvent(new Event('updatefound'));
};

const batch = params.get('batch');
const engine = createOutboxEngine({
  collections: {
    notes: restHandler({
      baseUrl: '/api/notes',
      ...(batch === null ? {} : { batch: batch === 'off' ? false : { url: batch } }),
    }),
  },
  clock: { now: () => Date.now() + aheadMs },
  leaseMs,
  requestTimeoutMs: Number(params.get('timeout') ?? leaseMs),
  // `backoff=default`: the engine's own (base 1 s, cap 5 min), as an app ships it.
  ...(params.get('backoff') === 'default' ? {} : { backoff: { baseMs: 250, maxMs: 2000 } }),
  ...(params.has('stall') ? { watchdog: { stallAfterMs: Number(params.get('stall')) } } : {}),
  onEvent(event) {
    const record = { ...event, holder: engine.holderId, version, at: Date.now() };
    events.push(record);
    channel.postMessage(record);
  },
});
scope.__e2e = { events, holderId: engine.holderId, version };
engine.attach(scope);

// `heartbeat=<ms>`: says it is alive on `e2e-events` while it runs, so a test can see the browser
// stop the worker without sending it an event (which would start it again). A timer is not an
// event: it keeps no browser's worker alive.
const heartbeat = Number(params.get('heartbeat') ?? 0);
if (heartbeat > 0) {
  setInterval(
    () => channel.postMessage({ type: 'heartbeat', holder: engine.holderId, at: Date.now() }),
    heartbeat,
  );
}

/** Takes Background Sync and Periodic Background Sync away from this realm's registrations. */
function withoutBackgroundSync(): void {
  for (const api of ['sync', 'periodicSync']) {
    Object.defineProperty(ServiceWorkerRegistration.prototype, api, {
      get: () => undefined,
      configurable: true,
    });
  }
}
