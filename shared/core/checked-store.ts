import { mayHaveOtherNames } from '../model/pending.ts';
import type { OutboxStore, Receipt, RecordName, Tombstone } from '../model/store.ts';
import { isRevision } from '../plan/hook-values.ts';

/**
 * The store as the core reads it (SPEC §2, §6.1, G7): a receipt, a record name or a tombstone
 * whose stored value is damaged — a field the engine follows of the wrong type — reads as none.
 * The engine already handles each being gone (receipts and tombstones are pruned, names expire):
 * a missing receipt or name is asked of the server (§8, §15), a missing tombstone means the row
 * it stood for is settled. So a damaged entry never stops the loop, never names a record, and is
 * left in the store as it is.
 */
export function checkedStore(store: OutboxStore): OutboxStore {
  return {
    get: store.get.bind(store),
    getMany: store.getMany.bind(store),
    scan: store.scan.bind(store),
    holdingRows: store.holdingRows.bind(store),
    byTarget: store.byTarget.bind(store),
    byTargets: store.byTargets.bind(store),
    replace: store.replace.bind(store),
    replaceEach: store.replaceEach.bind(store),
    listConflicts: store.listConflicts.bind(store),
    prune: store.prune.bind(store),
    getMeta: store.getMeta.bind(store),
    setMeta: store.setMeta.bind(store),
    updateMeta: store.updateMeta.bind(store),
    onChange: store.onChange.bind(store),
    close: store.close.bind(store),
    getReceipt: async (requestId: string, owner?: string) =>
      readable(await store.getReceipt(requestId, owner), isReceipt),
    listReceipts: async (owner: string, limit: number) =>
      (await store.listReceipts(owner, limit)).filter(isReceipt),
    getTombstone: async (id: string, owner?: string) =>
      readable(await store.getTombstone(id, owner), isTombstone),
    getName: async (owner: string, pendingId: string) =>
      readable(await store.getName(owner, pendingId), isName),
  };
}

function readable<T>(value: T | undefined, check: (value: T) => boolean): T | undefined {
  return value !== undefined && check(value) ? value : undefined;
}

const text = (value: unknown) => typeof value === 'string' && value !== '';
/** A server id: text that does not read as a pending target (§6.1). */
const serverId = (value: unknown) => text(value) && mayHaveOtherNames(value as string);
const optional = (value: unknown, is: (value: unknown) => boolean) =>
  value === undefined || is(value);

function isReceipt(receipt: Receipt): boolean {
  return (
    typeof receipt === 'object' &&
    receipt !== null &&
    text(receipt.requestId) &&
    typeof receipt.status === 'number' &&
    optional(receipt.serverId, serverId) &&
    optional(receipt.revision, isRevision)
  );
}

function isTombstone(tombstone: Tombstone): boolean {
  return typeof tombstone === 'object' && tombstone !== null && optional(tombstone.into, text);
}

function isName(name: RecordName): boolean {
  return (
    typeof name === 'object' &&
    name !== null &&
    serverId(name.serverId) &&
    optional(name.revision, isRevision)
  );
}
