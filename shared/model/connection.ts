import type { FlushReport, OutboxApi, OutboxDiagnostics, RowFilter, RowView } from './page-api.ts';
import type { Receipt, Tombstone } from './store.ts';

/**
 * The page ⇄ worker connection (SPEC §13), as types and message shapes. The page posts a
 * {@link ConnectMessage} with a `MessagePort`; the worker exposes an {@link EndpointApi} on it
 * with Comlink. Flush requests go as {@link FlushMessage}s to the worker itself, because only a
 * worker event can extend its lifetime with `waitUntil` (port messages cannot).
 */

/** Background Sync tag: registered by the client on enqueue, flushed by the worker (§12). */
export const SYNC_TAG = 'sw-outbox';
/** Periodic Background Sync tag, registered by the client when permitted (§12). */
export const PERIODIC_SYNC_TAG = 'sw-outbox-periodic';
/** Push payload `type` that asks the worker to flush (§12). */
export const PUSH_FLUSH_TYPE = 'sw-outbox.flush';

/** Page → worker message type that opens a connection (§13). */
export const CONNECT_MESSAGE = 'sw-outbox.connect';
/** Page → worker message type that asks for a flush (§12). */
export const FLUSH_MESSAGE = 'sw-outbox.flush';
/** Sent on the port instead of exposing an API when the worker refuses a connection. */
export const REFUSED_MESSAGE = 'sw-outbox.refused';
/** Sent on a flush message's reply port when the flush finished. */
export const FLUSHED_MESSAGE = 'sw-outbox.flushed';
/** Worker → every window of its origin, once per worker start (§13.1). */
export const STARTED_MESSAGE = 'sw-outbox.started';
/** Page → worker: which instance runs now? `ports[0]` gets a {@link PongMessage} (§13.1). */
export const PING_MESSAGE = 'sw-outbox.ping';
/** The answer to a {@link PING_MESSAGE}. */
export const PONG_MESSAGE = 'sw-outbox.pong';

/** Page → worker: open a connection for one owner; `ports[0]` carries the API. */
export interface ConnectMessage {
  type: typeof CONNECT_MESSAGE;
  owner: string;
}

/** Page → worker: flush one owner (all known owners if absent); `ports[0]`, if any, gets the reply. */
export interface FlushMessage {
  type: typeof FLUSH_MESSAGE;
  owner?: string;
  force?: boolean;
  /** Sent after an enqueue: the worker may wait `batch.lingerMs` to fill a batch (§15.1). */
  linger?: boolean;
}

/**
 * Announces a worker start to its window clients (§13.1): a page whose connection belongs to
 * another holder id knows, without making a call, that its port is dead.
 */
export interface StartedMessage {
  type: typeof STARTED_MESSAGE;
  holderId: string;
}

/** Page → worker liveness question; an event, so it starts a stopped worker (§13.1). */
export interface PingMessage {
  type: typeof PING_MESSAGE;
}

/** Worker → page: the holder id of the instance that answered a ping. */
export interface PongMessage {
  type: typeof PONG_MESSAGE;
  holderId: string;
}

/** Worker → page, on the connection's port: why the worker refused it. */
export interface RefusedMessage {
  type: typeof REFUSED_MESSAGE;
  code: string;
  message: string;
}

/** Worker → page, on a flush message's reply port: the flush's reports, or why it failed. */
export type FlushReply =
  | { type: typeof FLUSHED_MESSAGE; ok: true; reports: FlushReport[] }
  | { type: typeof FLUSHED_MESSAGE; ok: false; error: { code?: string; message: string } };

/** Options of `setAuth` (§13). */
export interface SetAuthOptions {
  /** Keep the headers in IndexedDB so a restarted worker can send with no tab open (§13). */
  persist?: boolean;
}

/** What the worker says about itself when a connection opens. */
export interface Hello {
  holderId: string;
  owner: string;
  bundle: string;
  /** The BroadcastChannel on which the worker's store announces every commit (§3, §13.1). */
  changes?: string;
}

/** What `watch(id)` reports about one row until it is settled (§13). */
export type WatchUpdate =
  | { type: 'row'; row: RowView }
  | { type: 'receipt'; receipt: Receipt }
  /** The row was coalesced, cancelled, superseded or discarded; `into` is then watched. */
  | { type: 'removed'; tombstone: Tombstone }
  /** The row is gone and neither a receipt nor a tombstone tells why. */
  | { type: 'gone'; id: string };

/**
 * The API one connection serves, bound to its owner. Listeners arrive as Comlink proxies. The page
 * ends a connection by releasing its proxy (Comlink's `releaseProxy`), which disposes it here.
 */
export interface EndpointApi extends Omit<OutboxApi, 'flush'>, OutboxDiagnostics {
  hello(): Promise<Hello>;
  /** Calls `listener` now and after each committed change (§3); returns a subscription id. */
  subscribe(listener: (rows: RowView[]) => void, filter?: RowFilter): Promise<string>;
  watch(id: string, listener: (update: WatchUpdate) => void): Promise<string>;
  unsubscribe(subscriptionId: string): Promise<void>;
  setAuth(headers: Record<string, string> | null, options?: SetAuthOptions): Promise<void>;
}

/** Whether a message is one of ours, with the given type. */
export function isOutboxMessage<T extends { type: string }>(
  value: unknown,
  type: T['type'],
): value is T {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === type;
}
