/**
 * Periodic Background Sync, page side (SPEC §12): loaded after the page connected, since no
 * enqueue needs it (SPEC §22: the page's first load).
 */

/**
 * Registers periodic sync under `tag` when the permission is granted; returns whether it did.
 * The tag comes from the caller, so this chunk shares no module with the first load.
 */
export default async function registerPeriodicSync(
  registration: ServiceWorkerRegistration | undefined,
  minInterval: number,
  tag: string,
): Promise<boolean> {
  if (registration?.periodicSync === undefined) return false;
  const status = await navigator.permissions
    .query({ name: 'periodic-background-sync' as PermissionName })
    .catch(() => undefined);
  if (status?.state !== 'granted') return false;
  return registration.periodicSync.register(tag, { minInterval }).then(
    () => true,
    () => false,
  );
}
