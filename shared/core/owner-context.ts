import type { OutboxStore } from '../model/store.ts';
import type { CoreDeps } from './config.ts';

/**
 * What each part of one owner's API (enqueue, the manual actions, the reads) works with, built
 * once by `createOwnerApi`. `store` is the core's store seen through the `api` boundary (SPEC §11,
 * G7): a storage fault in any call becomes an `OutboxError` there, not at each call site.
 * `deps.store` is that same guarded store, so no part can reach the bare one by accident.
 */
export interface OwnerContext {
  readonly deps: CoreDeps;
  readonly store: OutboxStore;
  /** Every read and write is scoped to this owner (G6). */
  readonly owner: string;
}
