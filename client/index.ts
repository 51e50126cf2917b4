/**
 * `sw-outbox/client`: the page side (SPEC §13): registration, the Comlink connection with
 * reconnect, and the page sender.
 *
 * ```ts
 * const outbox = await connectOutbox({ swUrl: '/sw.js', owner: 'user-1' });
 * await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'x' } });
 * ```
 */
export type { WatchUpdate } from '../shared/connection.ts';
export type { SetAuthOptions } from '../shared/credentials.ts';
export { ERROR_CODES, type ErrorCode, OutboxError } from '../shared/errors.ts';
export type { CollectionHandler } from '../shared/handler.ts';
export type {
  EnqueueInput,
  EnqueueResult,
  FlushOptions,
  FlushReport,
  OutboxStats,
  RowFilter,
  RowView,
} from '../shared/protocol.ts';
export { type RestHandlerOptions, restHandler } from '../shared/rest-handler.ts';
export type { ConflictLedgerEntry, Receipt } from '../shared/store/types.ts';
export { type ConnectOptions, connectOutbox, type OutboxClient } from './connect.ts';
export type { PageSenderConfig } from './page-sender.ts';
