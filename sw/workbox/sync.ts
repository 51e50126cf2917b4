import { SYNC_TAG } from '../../shared/model/connection.ts';

/**
 * Asks for the engine's Background Sync (SPEC §12), so the browser wakes the worker when it is
 * back online; a browser without it (Firefox, WebKit) relies on the worker's own triggers.
 */
export async function askForSync(): Promise<void> {
  const scope = globalThis as unknown as ServiceWorkerGlobalScope;
  await scope.registration?.sync?.register(SYNC_TAG).catch(() => undefined);
}
