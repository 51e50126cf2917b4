import type { OutboxError } from '../shared/model/errors.ts';
import type { Registered } from './registration.ts';

/**
 * The page's first worker, while it installs (SPEC §13): resolves once one is active, and fails
 * at once — not after the connection's timeout — when none will come: the browser refused the
 * registration or has no service workers, or the worker's install failed (its install event
 * rejected: a precached URL that does not load, a handler that threw). Loaded on demand, only
 * while a page has no active worker; the diagnosis (./no-worker.ts) only when one failed.
 */
export default async function firstWorker(
  registered: Registered | undefined,
  registration: ServiceWorkerRegistration | undefined,
  Failure: typeof OutboxError,
): Promise<ServiceWorker> {
  const fail = async (reason: unknown) => (await import('./no-worker.ts')).default(reason, Failure);
  if (registered === undefined || registration === undefined) throw await fail(registered?.error);
  const worker = await installed(registration);
  if (worker === undefined) throw await fail(INSTALL_FAILED);
  return worker;
}

/** What no-worker.ts is told when the install failed: browsers give no reason for it. */
export const INSTALL_FAILED = 'the worker failed to install: its install event rejected';

/**
 * The registration's active worker once there is one; undefined when the worker that was
 * installing became redundant and no other is on its way.
 */
function installed(registration: ServiceWorkerRegistration): Promise<ServiceWorker | undefined> {
  return new Promise((resolve) => {
    const follow = () => {
      if (registration.active) return resolve(registration.active);
      const next = registration.installing ?? registration.waiting;
      if (next === null) return resolve(undefined);
      next.addEventListener('statechange', follow, { once: true });
    };
    follow();
  });
}
