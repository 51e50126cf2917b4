import type { OutboxStore } from '../model/store.ts';

/**
 * The owners a sender flushes when no page tells it whom to serve (SPEC §12: a worker flushing
 * after every tab has closed). The list lives in the store's `meta` and grows when a page connects.
 */

/** The `meta` key holding the known owners. */
const OWNERS_META_KEY = 'owners';

/** The known owners, oldest first. */
export async function knownOwners(store: OutboxStore): Promise<string[]> {
  const value = await store.getMeta(OWNERS_META_KEY);
  return Array.isArray(value)
    ? value.filter((owner): owner is string => typeof owner === 'string')
    : [];
}

/**
 * Adds an owner to the known list, in one transaction: contexts adding different owners at the
 * same instant keep both. A known owner costs one read.
 */
export async function rememberOwner(store: OutboxStore, owner: string): Promise<void> {
  if ((await knownOwners(store)).includes(owner)) return;
  await store.updateMeta(OWNERS_META_KEY, (value) => {
    const owners = Array.isArray(value) ? value : [];
    return owners.includes(owner) ? owners : [...owners, owner];
  });
}
