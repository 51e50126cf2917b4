/**
 * `sw-outbox/sw`: the service-worker runtime (SPEC §12, §14).
 *
 * ```ts
 * const engine = createOutboxEngine({ collections: { notes: restHandler({ baseUrl: '/api/notes' }) } });
 * engine.attach(self);
 * ```
 */

export type { WorkerEnqueueOptions } from '../shared/core/outbox-api.ts';
export type {
  EndpointApi,
  Hello,
  SetAuthOptions,
  WatchUpdate,
} from '../shared/model/connection.ts';
export { PERIODIC_SYNC_TAG, PUSH_FLUSH_TYPE, SYNC_TAG } from '../shared/model/connection.ts';
export { ERROR_CODES, type ErrorCode } from '../shared/model/error-codes.ts';
export { OutboxError } from '../shared/model/errors.ts';
export type { CollectionHandler, ConflictPolicy } from '../shared/model/handler.ts';
export type {
  FlushOptions,
  FlushReport,
  OutboxApi,
  OutboxDiagnostics,
  OutboxEvent,
  OutboxHealth,
  StallCause,
} from '../shared/model/page-api.ts';
export type { HealthBounds } from '../shared/plan/health.ts';
export type { AuthHook } from '../shared/runtime/credentials.ts';
export type { FlushRun } from '../shared/runtime/flush-scheduler.ts';
export { type RestHandlerOptions, restHandler } from '../shared/wire/rest-handler.ts';
export type { EngineEvent, OutboxEngineConfig, TriggerEvent } from './context.ts';
export { createOutboxEngine, type OutboxEngine, type WorkerOutboxApi } from './engine.ts';
