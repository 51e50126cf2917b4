import type { Workbox } from 'workbox-window';
import {
  checkFilter,
  checkId,
  checkListener,
  checkObject,
  checkText,
} from '../shared/model/arguments.ts';
import {
  PERIODIC_SYNC_TAG,
  type SetAuthOptions,
  type WatchUpdate,
} from '../shared/model/connection.ts';
import type { OutboxApi, OutboxDiagnostics, RowFilter, RowView } from '../shared/model/page-api.ts';
import { installComlinkErrors } from '../shared/runtime/comlink-errors.ts';
import { outboxCalls, type PersistWhen } from './outbox-calls.ts';
import { openOutboxConnection } from './outbox-connection.ts';
import type { PageSenderOption } from './page-sender.ts';
import { registerWorker } from './registration.ts';
import { Subscriptions } from './subscriptions.ts';

/** Options of {@link connectOutbox} (SPEC §13). */
export interface ConnectOptions {
  /** The worker script, e.g. `/sw.js`. */
  swUrl: string;
  /** The account whose rows this page works with (G6). */
  owner: string;
  /** Every call's timeout; a call answers or fails within about twice this. Default 5 s. */
  timeoutMs?: number;
  /** How long `flush()` waits for the worker's report. Default 60 s. */
  flushTimeoutMs?: number;
  scope?: string;
  type?: WorkerType;
  /**
   * Run the outbox in the tab while no worker controls the page (§12); omit to always use a
   * worker. Either the config, or a function that loads it — e.g.
   * `() => import('./outbox-config.ts').then((m) => m.pageSender)` — so that a page a worker
   * controls never loads the handlers.
   */
  pageSender?: PageSenderOption;
  /**
   * When to ask for persistent storage with `navigator.storage.persist()` (§23): `'never'`
   * (default; the app may call `requestPersistence()` itself), `'first-enqueue'`, or `'install'`.
   */
  persist?: PersistWhen;
  /** Periodic sync's minimum interval when permitted, or false to leave it alone. Default 12 h. */
  periodicSync?: { minIntervalMs: number } | false;
}

/** The page API (SPEC §13): the worker's API plus live views. Every call has a timeout; none hangs. */
export interface OutboxClient extends OutboxApi, OutboxDiagnostics {
  /** Who serves the page right now: its service worker, or the page sender. */
  readonly mode: 'worker' | 'page';
  readonly workbox: Workbox | undefined;
  /** Calls `listener` with the rows now and after every change; returns a function that stops it. */
  subscribe(listener: (rows: RowView[]) => void, filter?: RowFilter): () => void;
  /** Follows one row until it is settled (then its receipt); returns a function that stops it. */
  watch(id: string, listener: (update: WatchUpdate) => void): () => void;
  /** Hands credentials to the sender (§13); they are restored after every reconnect. */
  setAuth(headers: Record<string, string> | null, options?: SetAuthOptions): Promise<void>;
  /**
   * Asks the browser to keep this origin's storage (`navigator.storage.persist()`, §23) and
   * answers what it said; `health().storage.persisted` tells it later. Call it from a user
   * gesture where a browser asks the user (Firefox shows a prompt).
   */
  requestPersistence(): Promise<boolean>;
  close(): void;
}

/** Half a day: periodic sync's default minimum interval. */
const HALF_DAY_MS = 43_200_000;

/**
 * Connects a page to its outbox: registers the worker and returns the page API (SPEC §13). The
 * parts: {@link openOutboxConnection} (what serves the page, reconnects, the page sender's
 * handover), {@link outboxCalls} (the checked calls) and {@link Subscriptions} (live views kept
 * across reconnects).
 */
export async function connectOutbox(options: ConnectOptions): Promise<OutboxClient> {
  checkObject(options, 'options');
  checkText(options.owner, 'owner');
  checkText(options.swUrl, 'swUrl');
  installComlinkErrors();
  // Undefined where the browser has no service workers, or not in this (insecure) context.
  const container = navigator.serviceWorker as ServiceWorkerContainer | undefined;
  const registered = container ? registerWorker(options) : undefined;
  const subscriptions = new Subscriptions();
  const connection = await openOutboxConnection(options, container, registered, subscriptions);

  if (options.periodicSync !== false) {
    const { minIntervalMs } = options.periodicSync || { minIntervalMs: HALF_DAY_MS };
    void registered?.registration.then(async (registration) =>
      (await import('./periodic-sync.ts')).default(registration, minIntervalMs, PERIODIC_SYNC_TAG),
    );
  }

  return {
    ...outboxCalls(connection, registered, options.persist),
    get mode() {
      return connection.mode;
    },
    workbox: registered?.workbox,
    subscribe: (listener, filter) =>
      subscriptions.rows(checkFilter(filter), checkListener(listener)),
    watch: (id, listener) => subscriptions.watch(checkId(id), checkListener(listener)),
    close: connection.close,
  };
}
