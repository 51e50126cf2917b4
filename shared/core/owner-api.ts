import type { FlushOptions, FlushReport } from '../model/page-api.ts';
import type { CoreDeps } from './config.ts';
import type { OwnerApi } from './outbox-api.ts';
import { createOwnerActions } from './owner-actions.ts';
import type { OwnerContext } from './owner-context.ts';
import { createOwnerEnqueue } from './owner-enqueue.ts';
import { createOwnerReads } from './owner-reads.ts';
import { guardStore } from './storage-guard.ts';

/**
 * The page API bound to one owner (SPEC §13, G6): every read and write is scoped to `owner`.
 * Input is validated here, so the worker endpoint and the page sender validate alike. Its parts
 * (enqueue, the manual actions, the reads) share one context whose store is guarded once at the
 * `api` boundary: a storage fault in any of them is an `OutboxError` (§11, G7).
 */
export function createOwnerApi(
  deps: CoreDeps,
  owner: string,
  flush: (options?: FlushOptions) => Promise<FlushReport>,
): OwnerApi {
  const store = guardStore(deps.store, 'api');
  const ctx: OwnerContext = { deps: { ...deps, store }, store, owner };
  const reads = createOwnerReads(ctx);
  const { enqueue, existing } = createOwnerEnqueue(ctx);
  const actions = createOwnerActions(ctx, { enqueue, existing, allRows: reads.allRows });

  return {
    enqueue: (input, options) => enqueue(input, undefined, options),
    restore: actions.restore,
    rows: reads.rows,
    row: reads.row,
    viewsOf: reads.viewsOf,
    stats: reads.stats,
    flush,
    resumeHeld: actions.resumeHeld,
    retry: actions.retry,
    discard: actions.discard,
    conflicts: reads.conflicts,
    receipts: reads.receipts,
    receipt: reads.receipt,
  };
}
