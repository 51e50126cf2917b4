/**
 * `sw-outbox/sw`: the service-worker runtime (SPEC §12, §14).
 *
 * ```ts
 * const engine = createOutboxEngine({ collections: { notes: restHandler({ baseUrl: '/api/notes' }) } });
 * engine.attach(self);
 * ```
 */
export type { EndpointApi, Hello, WatchUpdate } from '../shared/connection.ts';
export { PERIODIC_SYNC_TAG, PUSH_FLUSH_TYPE, SYNC_TAG } from '../shared/connection.ts';
export type { AuthHook, SetAuthOptions } from '../shared/credentials.ts';
export { ERROR_CODES, type ErrorCode, OutboxError } from '../shared/errors.ts';
export type { FlushRun } from '../shared/flush-scheduler.ts';
export type { CollectionHandler, ConflictPolicy } from '../shared/handler.ts';
export type { FlushOptions, FlushReport, OutboxApi, OutboxEvent } from '../shared/protocol.ts';
export { type RestHandlerOptions, restHandler } from '../shared/rest-handler.ts';
export {
  createOutboxEngine,
  type EngineEvent,
  type OutboxEngine,
  type OutboxEngineConfig,
} from './engine.ts';
export type { TriggerEvent } from './triggers.ts';
