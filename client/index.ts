/**
 * `sw-outbox/client`: the page side (SPEC §13): registration, the Comlink connection with
 * reconnect, and the page sender.
 *
 * ```ts
 * const outbox = await connectOutbox({ swUrl: '/sw.js', owner: 'user-1' });
 * await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'x' } });
 * ```
 */
export type { SetAuthOptions, WatchUpdate } from '../shared/model/connection.ts';
export { ERROR_CODES, type ErrorCode } from '../shared/model/error-codes.ts';
export { OutboxError } from '../shared/model/errors.ts';
export type { CollectionHandler } from '../shared/model/handler.ts';
export type {
  EnqueueInput,
  EnqueueResult,
  FlushOptions,
  FlushReport,
  OutboxEvent,
  OutboxHealth,
  OutboxStats,
  RowFilter,
  RowView,
  StallCause,
  StorageState,
} from '../shared/model/page-api.ts';
export type { ConflictLedgerEntry, Receipt } from '../shared/model/store.ts';
export type { RecordStatus, RecordView, ServerRecord } from '../shared/plan/record-overlay.ts';
export { type RestHandlerOptions, restHandler } from '../shared/wire/rest-handler.ts';
export { type ConnectOptions, connectOutbox, type OutboxClient } from './connect.ts';
export type { OutboxHeld } from './held-event.ts';
export {
  type HealthOptions,
  type Observer,
  type OutboxObservable,
  observeHealth,
  observeRecords,
  observeRowProgress,
  observeRows,
  outboxObservable,
  type RecordOptions,
  type RowProgress,
  type Subscribable,
  type Unsubscribe,
} from './observable.ts';
export type { PersistWhen } from './outbox-calls.ts';
export type { PageSenderConfig, PageSenderOption } from './page-sender.ts';
