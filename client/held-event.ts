/**
 * `outbox-held` (SPEC §23): rows of an owner were held for want of credentials — a 401, or no
 * credentials for the owner at send time. Fired on the page's `window` as soon as the page hears
 * of the commit that held them: the store's change notice, which says `held` for such a commit
 * (§3; heard from the worker, or from another tab's page sender), or the page sender's own
 * settle. An app can ask the user to sign in again at once rather than learn of it from a failed
 * fetch; `health()` names the same cause (`held`) until `resumeHeld()` sends the rows.
 *
 * ```ts
 * window.addEventListener('outbox-held', (event) => {
 *   if (event.detail.owner === user) showSignInPrompt();
 * });
 * ```
 *
 * Every connected page of the owner hears it once per holding commit (two clients of one owner
 * in one page: twice).
 */
export interface OutboxHeld {
  /** The owner whose rows wait. */
  owner: string;
  /** The rows the holding commit changed: the held ones. */
  ids: string[];
  reason: 'held';
}

declare global {
  interface WindowEventMap {
    'outbox-held': CustomEvent<OutboxHeld>;
  }
}

/** Fires `outbox-held` on the page (the page sender's way; the connection's is inline). */
export function announceHeld(detail: OutboxHeld): void {
  dispatchEvent(new CustomEvent('outbox-held', { detail }));
}
