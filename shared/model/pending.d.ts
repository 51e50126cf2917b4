/**
 * Pending targets (SPEC §8), apart from the row codec: `restHandler` needs them on the page too,
 * where the codec's validator is not bundled.
 */
/** `pending:<create row id>`: the target of edits to a create that has no server id yet (§8). */
export declare const PENDING_PREFIX = 'pending:';
/** The create row id a pending target refers to, or undefined for a server id. */
export declare function pendingCreateId(targetId: string): string | undefined;
