import { OutboxError } from '../model/errors.ts';
import { outboxError } from '../model/outbox-error.ts';
import type { OutboxStore } from '../model/store.ts';
import { FlushStop } from './flush-stop.ts';

/**
 * Where a storage fault surfaced: inside a flush, or in a call of the page API. It decides what
 * the fault becomes, never whether it is swallowed.
 */
export type StorageBoundary = 'flush' | 'api';

/**
 * Runs a store call and turns a storage fault into a typed outcome (SPEC §11, G7). In a flush it
 * stops the flush as a device-side transient (`FlushStop('storage')`, which never marks the
 * network offline); in the page API it is an `OutboxError` with `quota_exceeded` or `storage`.
 * Errors that are already typed pass through unchanged.
 */
async function guardStorage<T>(boundary: StorageBoundary, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (boundary === 'flush') throw error instanceof FlushStop ? error : new FlushStop('storage');
    if (error instanceof OutboxError) throw error;
    // What the store could not clone (a proxy the checks could not see through) is the
    // caller's value, not a fault of the device.
    if (error instanceof Error && error.name === 'DataCloneError')
      throw outboxError('invalid_value', `a value cannot be stored: ${error.message}`);
    if (isQuotaError(error))
      throw outboxError('quota_exceeded', undefined, { cause: String(error) });
    throw outboxError('storage', undefined, { cause: String(error) });
  }
}

/**
 * The store seen through one boundary: every call that returns a promise is guarded by
 * {@link guardStorage}, so a storage fault becomes the boundary's typed outcome at this one place
 * instead of at each call site. Listeners and `close` pass through unchanged.
 */
export function guardStore(store: OutboxStore, boundary: StorageBoundary): OutboxStore {
  const guard =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A) =>
      guardStorage(boundary, () => call(...args));
  return {
    get: guard(store.get.bind(store)),
    getMany: guard(store.getMany.bind(store)),
    scan: guard(store.scan.bind(store)),
    holdingRows: guard(store.holdingRows.bind(store)),
    byTarget: guard(store.byTarget.bind(store)),
    byTargets: guard(store.byTargets.bind(store)),
    replace: guard(store.replace.bind(store)),
    replaceEach: guard(store.replaceEach.bind(store)),
    getReceipt: guard(store.getReceipt.bind(store)),
    listReceipts: guard(store.listReceipts.bind(store)),
    listConflicts: guard(store.listConflicts.bind(store)),
    getTombstone: guard(store.getTombstone.bind(store)),
    getName: guard(store.getName.bind(store)),
    prune: guard(store.prune.bind(store)),
    getMeta: guard(store.getMeta.bind(store)),
    setMeta: guard(store.setMeta.bind(store)),
    updateMeta: guard(store.updateMeta.bind(store)),
    onChange: (listener) => store.onChange(listener),
    close: () => store.close(),
  };
}

/** Whether an IndexedDB/DOM exception means the device ran out of storage. */
function isQuotaError(error: unknown): boolean {
  return error instanceof Error && error.name === 'QuotaExceededError';
}
