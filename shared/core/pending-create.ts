import { decodeRow, isIntentRow, type Observed, PENDING_PREFIX } from '../model/row.ts';
import type { OutboxStore, Receipt, RecordName, Tombstone } from '../model/store.ts';

/**
 * Reads what is known of the create behind a `pending:<id>` target (SPEC §6.1, §8): its row, the
 * server id its record is named by, its receipt, or the tombstone that says where it went.
 */

/**
 * Coalesce tombstones followed from a create to the row it was merged into. Each hop is one
 * enqueue that merged into the create, so a real chain is short; the bound only stops a corrupt
 * tombstone cycle from looping.
 */
const MAX_COALESCE_HOPS = 16;

/**
 * What `owner` knows of the create behind `pending:<createId>`, following coalesce tombstones.
 * Only the owner's own rows, receipts and tombstones are read (G6): another owner's create is
 * unknown here, as if it never existed.
 */
export async function resolvePendingCreate(
  store: OutboxStore,
  owner: string,
  createId: string,
): Promise<{
  id: string;
  row?: Observed;
  name?: RecordName;
  receipt?: Receipt;
  tombstone?: Tombstone;
}> {
  let id = createId;
  for (let hop = 0; hop < MAX_COALESCE_HOPS; hop++) {
    const raw = await store.get(id, owner);
    if (raw !== undefined) {
      const decoded = decodeRow(raw);
      return decoded.ok && decoded.row.owner === owner
        ? { id, row: { row: decoded.row, raw } }
        : { id };
    }
    // The record's name first (§6.1): it outlives the receipt, which is pruned sooner. It is
    // written under the create's target, which a create merged into a later row keeps.
    const name = hop === 0 ? await store.getName(owner, `${PENDING_PREFIX}${createId}`) : undefined;
    const receipt = await store.getReceipt(id, owner);
    if (name !== undefined || receipt !== undefined)
      return { id, ...(name === undefined ? {} : { name }), ...(receipt ? { receipt } : {}) };
    const tombstone = await store.getTombstone(id, owner);
    if (tombstone?.into === undefined || tombstone.reason !== 'coalesced')
      return tombstone ? { id, tombstone } : { id };
    id = tombstone.into;
  }
  return { id };
}

/** The intent rows of a pending create's record that may still be converted (not blocked). */
export async function intentRowsOf(
  store: OutboxStore,
  owner: string,
  collection: string,
  targetId: string,
): Promise<Observed[]> {
  const rows: Observed[] = [];
  for (const raw of await store.byTarget(owner, collection, targetId)) {
    const decoded = decodeRow(raw);
    if (decoded.ok && isIntentRow(decoded.row) && decoded.row.state !== 'blocked')
      rows.push({ row: decoded.row, raw });
  }
  return rows;
}
