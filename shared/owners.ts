import type { OutboxStore } from './store/types.ts';

/**
 * The owners a sender flushes when no page tells it whom to serve (SPEC §12: a worker flushing
 * after every tab has closed). The list lives in the store's `meta` and grows when a page connects.
 */

/** The `meta` key holding the known owners. */
export const OWNERS_META_KEY = 'owners';

/** The known owners, oldest first. */
export async function knownOwners(store: OutboxStore): Promise<string[]> {
  const value = await store.getMeta(OWNERS_META_KEY);
  return Array.isArray(value)
    ? value.filter((owner): owner is string => typeof owner === 'string')
    : [];
}

/**
 * Adds an owner to the known list. `meta` has no compare-and-swap, so two contexts adding
 * different owners at the same instant can lose one; the loser is added again on its next connect.
 */
export async function rememberOwner(store: OutboxStore, owner: string): Promise<void> {
  const owners = await knownOwners(store);
  if (!owners.includes(owner)) await store.setMeta(OWNERS_META_KEY, [...owners, owner]);
}
