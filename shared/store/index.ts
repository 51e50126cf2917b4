/** The storage port (SPEC §3) and its two implementations, which pass one conformance suite. */

export type * from '../model/store.ts';
export { type IdbStoreOptions, openIdbStore } from './idb.ts';
export { createMemoryStore, type MemoryStoreOptions, resetMemoryStores } from './memory.ts';
export {
  changeChannelName,
  DEFAULT_DB_NAME,
  INDEX,
  INITIAL_DB_VERSION,
  OUTBOX_SCHEMA,
  type OutboxDbSchema,
  STORE,
  type StoreDeclaration,
  type StoreName,
} from './schema.ts';
