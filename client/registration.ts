import type { Workbox } from 'workbox-window';
// The ES2017 build, not the ES5 one the package's `module` field names: half the bytes.
import { Workbox as WorkboxWindow } from 'workbox-window/build/workbox-window.prod.mjs';
import { SYNC_TAG } from '../shared/model/connection.ts';

/**
 * Registration and the browser's wake-up APIs, page side (SPEC §12, §13): the worker is
 * registered with workbox-window (which tracks its install/update lifecycle); Background Sync is
 * registered after each enqueue, so a worker flushes when connectivity returns even with no tab
 * open; Periodic Background Sync is registered when the browser grants it (`./periodic-sync.ts`, loaded
 * after connecting: no enqueue needs it).
 */

export interface RegistrationOptions {
  swUrl: string;
  scope?: string;
  type?: WorkerType;
}

/** The worker registration, while it completes. */
export interface Registered {
  readonly workbox: Workbox;
  /** Settles with the registration, or undefined when registering failed (`error` says why). */
  readonly registration: Promise<ServiceWorkerRegistration | undefined>;
  /** The browser's reason when registering failed: a 404, a script that threw, a wrong type. */
  error?: unknown;
}

/** Registers the worker at once (not after `load`: the outbox may be needed before it). */
export function registerWorker(options: RegistrationOptions): Registered {
  const init: { scope?: string; type?: WorkerType } = {};
  if (options.scope !== undefined) init.scope = options.scope;
  if (options.type !== undefined) init.type = options.type;
  const workbox = new WorkboxWindow(options.swUrl, init);
  const registered: Registered = {
    workbox,
    registration: workbox.register({ immediate: true }).catch((error: unknown) => {
      registered.error = error;
      return undefined;
    }),
  };
  return registered;
}

/** Asks for a `sync` event (tag `sw-outbox`); quietly does nothing where it is unsupported. */
export async function requestBackgroundSync(
  registration: ServiceWorkerRegistration | undefined,
): Promise<void> {
  await registration?.sync?.register(SYNC_TAG).catch(() => undefined);
}
