/**
 * Pending targets (SPEC §8), apart from the row codec: `restHandler` needs them on the page too,
 * where the codec's validator is not bundled.
 */

/** `pending:<create row id>`: the target of edits to a create that has no server id yet (§8). */
export const PENDING_PREFIX = 'pending:';

/** The create row id a pending target refers to, or undefined for a server id. */
export function pendingCreateId(targetId: string): string | undefined {
  return targetId.startsWith(PENDING_PREFIX) ? targetId.slice(PENDING_PREFIX.length) : undefined;
}
