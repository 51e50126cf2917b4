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

/**
 * Whether other names may point at `targetId` (§6.1): only a server id is named by the
 * `pending:<C>` its create's receipt gave it. A server id is never a pending target (a receipt
 * naming one is refused), so a `pending:` target has no other name to look up.
 */
export function mayHaveOtherNames(targetId: string): boolean {
  return !targetId.startsWith(PENDING_PREFIX);
}
