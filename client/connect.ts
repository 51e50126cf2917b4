import { proxy } from 'comlink';
import type { Workbox } from 'workbox-window';
import {
  checkAuthOptions,
  checkEnqueueInput,
  checkFilter,
  checkFlushOptions,
  checkHeaders,
  checkId,
  checkLimit,
  checkListener,
} from '../shared/model/arguments.ts';
import {
  type EndpointApi,
  isOutboxMessage,
  type SetAuthOptions,
  STARTED_MESSAGE,
  type StartedMessage,
  type WatchUpdate,
} from '../shared/model/connection.ts';
import { OutboxError } from '../shared/model/errors.ts';
import {
  emptyFlushReport,
  type FlushOptions,
  type FlushReport,
  type OutboxApi,
  type RowFilter,
  type RowView,
} from '../shared/model/page-api.ts';
import { newRequestId } from '../shared/plan/request-id.ts';
import { installComlinkErrors } from '../shared/runtime/comlink-errors.ts';
import { cryptoIds } from '../shared/runtime/ids.ts';
import { WorkerChannel } from './channel.ts';
import { flushViaWorker } from './flush-message.ts';
import type { PageSender, PageSenderConfig } from './page-sender.ts';
import { registerPeriodicSync, registerWorker, requestBackgroundSync } from './registration.ts';
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
  /** Run the outbox in the tab while no worker controls the page (§12); omit to always use a worker. */
  pageSender?: PageSenderConfig;
  /** Periodic sync's minimum interval when permitted, or false to leave it alone. Default 12 h. */
  periodicSync?: { minIntervalMs: number } | false;
}

/** The page API (SPEC §13): the worker's API plus live views. Every call has a timeout; none hangs. */
export interface OutboxClient extends OutboxApi {
  /** Who serves the page right now: its service worker, or the page sender. */
  readonly mode: 'worker' | 'page';
  readonly workbox: Workbox | undefined;
  /** Calls `listener` with the rows now and after every change; returns a function that stops it. */
  subscribe(listener: (rows: RowView[]) => void, filter?: RowFilter): () => void;
  /** Follows one row until it is settled (then its receipt); returns a function that stops it. */
  watch(id: string, listener: (update: WatchUpdate) => void): () => void;
  /** Hands credentials to the sender (§13); they are restored after every reconnect. */
  setAuth(headers: Record<string, string> | null, options?: SetAuthOptions): Promise<void>;
  close(): void;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Connects a page to its outbox: registers the worker and returns the page API (SPEC §13). */
export async function connectOutbox(options: ConnectOptions): Promise<OutboxClient> {
  if (!isObject(options))
    throw new OutboxError('invalid_argument', 'connectOutbox takes an options object', {
      argument: 'options',
    });
  if (typeof options.owner !== 'string' || options.owner === '') {
    throw new OutboxError('invalid_argument', 'connectOutbox needs a non-empty owner');
  }
  if (typeof options.swUrl !== 'string' || options.swUrl === '')
    throw new OutboxError('invalid_argument', 'connectOutbox needs the worker script as swUrl', {
      argument: 'swUrl',
    });
  installComlinkErrors();
  const { owner } = options;
  const timeoutMs = options.timeoutMs ?? 5000;
  const container = 'serviceWorker' in navigator ? navigator.serviceWorker : undefined;
  const registered = container ? registerWorker(options) : undefined;
  const subscriptions = new Subscriptions();
  let auth: { headers: Record<string, string> | null; options: SetAuthOptions } | undefined;
  let pageSender: PageSender | undefined;
  let closed = false;
  // The store's commit notices (§3), heard here so that live views notice a stopped worker
  // (§13.1); the channel's name comes from the worker, which knows its database.
  let changes: BroadcastChannel | undefined;
  const onChange = (event: MessageEvent) => {
    const notice = event.data as { owner?: unknown } | null;
    if (pageSender === undefined && subscriptions.size > 0 && notice?.owner === owner)
      channel.noteChange();
  };

  const channel = new WorkerChannel({
    owner,
    timeoutMs,
    async target() {
      if (container?.controller) return container.controller;
      const registration = await registered?.registration;
      return (
        container?.controller ?? registration?.active ?? (await registered?.workbox.active) ?? null
      );
    },
    onConnect(link) {
      const api = link.remote as unknown as EndpointApi;
      // A new connection starts empty: restore credentials, then subscriptions.
      if (auth !== undefined) api.setAuth(auth.headers, auth.options).catch(() => undefined);
      subscriptions.attach(api, (listener) => proxy(channel.heard(listener)));
      if (changes === undefined && link.hello.changes && typeof BroadcastChannel === 'function') {
        changes = new BroadcastChannel(link.hello.changes);
        changes.onmessage = onChange;
      }
    },
  });

  const api = async <T>(call: (api: EndpointApi) => Promise<T>): Promise<T> => {
    if (closed) throw new OutboxError('closed');
    if (pageSender !== undefined) return call(await pageSender.api());
    try {
      return await channel.call((remote) => call(remote as unknown as EndpointApi));
    } catch (error) {
      // What the checks cannot see (a proxy around a plain object) still cannot be posted.
      if (error instanceof Error && error.name === 'DataCloneError')
        throw new OutboxError(
          'invalid_value',
          `an argument cannot be sent to the worker: ${error.message}`,
        );
      throw error;
    }
  };
  const flush = async (
    flushOptions: FlushOptions & { linger?: boolean } = {},
  ): Promise<FlushReport[]> => {
    if (closed) throw new OutboxError('closed');
    if (pageSender !== undefined) return pageSender.flush(flushOptions);
    const worker = await channel.ensure().then((link) => link.worker);
    return flushViaWorker(worker, owner, flushOptions, options.flushTimeoutMs ?? 60_000);
  };
  const flushSoon = (flushOptions: FlushOptions & { linger?: boolean } = {}) =>
    void flush(flushOptions).catch(() => undefined);
  /**
   * After a write: flush soon — after the worker's linger, so writes made back to back go in one
   * batch (§15.1) — and ask for Background Sync should the flush not get through.
   */
  const written = <T>(result: T): T => {
    flushSoon({ linger: true });
    void registered?.registration.then(requestBackgroundSync);
    return result;
  };
  /** A call whose argument is checked here, before anything is posted (G7). */
  const checked =
    <A, R>(check: (value: unknown) => unknown, call: (a: EndpointApi, arg: A) => Promise<R>) =>
    async (arg: A): Promise<R> => {
      check(arg);
      return api((a) => call(a, arg));
    };

  // A worker took control (first install, update, or a page sender's tab): hand over to it.
  const onControllerChange = () => {
    channel.drop();
    if (pageSender !== undefined) {
      pageSender.stop();
      pageSender = undefined;
    }
    void channel.ensure().catch(() => undefined);
  };
  // A worker instance started (§13.1). An update's new worker also runs its script while it
  // installs, beside the active one: that handover is controllerchange's, so only an active
  // worker's announcement counts.
  const onWorkerMessage = (event: MessageEvent) => {
    if (pageSender !== undefined || !isOutboxMessage<StartedMessage>(event.data, STARTED_MESSAGE))
      return;
    const source = event.source as ServiceWorker | null;
    if (
      source?.state !== undefined &&
      source.state !== 'activated' &&
      source.state !== 'activating'
    )
      return;
    channel.noteStart(event.data.holderId);
  };
  const onOnline = () => flushSoon({ force: true });
  const onVisible = () => {
    if (document.visibilityState === 'visible') flushSoon();
  };
  container?.addEventListener('controllerchange', onControllerChange);
  container?.addEventListener('message', onWorkerMessage);
  // Messages from the worker wait in a queue until the page opts in; before the document has
  // parsed it would otherwise hold back a start announcement.
  container?.startMessages();
  globalThis.addEventListener('online', onOnline);
  globalThis.document?.addEventListener('visibilitychange', onVisible);

  const shutDown = () => {
    closed = true;
    container?.removeEventListener('controllerchange', onControllerChange);
    container?.removeEventListener('message', onWorkerMessage);
    changes?.close();
    globalThis.removeEventListener('online', onOnline);
    globalThis.document?.removeEventListener('visibilitychange', onVisible);
    subscriptions.clear();
    pageSender?.stop();
    channel.close();
  };

  try {
    if (!container?.controller && options.pageSender !== undefined) {
      // Loaded only here: the page sender carries the whole core, which a page that a worker
      // controls never needs.
      const { startPageSender } = await import('./page-sender.ts');
      pageSender = startPageSender(options.pageSender, owner);
      subscriptions.attach(await pageSender.api(), (listener) => listener);
      // Control may have arrived while the page sender opened; its event has fired by now.
      if (container?.controller) onControllerChange();
      else flushSoon();
    } else {
      await withRetry(() => channel.ensure());
      // Opening the app is when rows that waited (offline, on backoff, for a browser without
      // Background Sync) should go: a non-forced flush, so backoff still holds (§12).
      flushSoon();
    }
  } catch (error) {
    shutDown();
    throw error;
  }

  if (options.periodicSync !== false) {
    void registered?.registration.then((registration) =>
      registerPeriodicSync(
        registration,
        (options.periodicSync || { minIntervalMs: DAY_MS / 2 }).minIntervalMs,
      ),
    );
  }

  return {
    get mode() {
      return pageSender === undefined ? 'worker' : 'page';
    },
    workbox: registered?.workbox,
    async enqueue(input) {
      checkEnqueueInput(input);
      // An id made here makes the retry after a reconnect safe: enqueue is idempotent by id (§9).
      const withId =
        isObject(input) && input.id === undefined && typeof input.collection === 'string'
          ? { ...input, id: newRequestId(cryptoIds, input.collection) }
          : input;
      return written(await api((a) => a.enqueue(withId)));
    },
    subscribe: (listener, filter) =>
      subscriptions.rows(checkFilter(filter), checkListener(listener)),
    watch: (id, listener) => subscriptions.watch(checkId(id), checkListener(listener)),
    async flush(flushOptions) {
      const reports = await flush(checkFlushOptions(flushOptions));
      return reports[0] ?? emptyFlushReport();
    },
    rows: checked(checkFilter, (a, filter) => a.rows(filter)),
    row: checked(checkId, (a, id) => a.row(id)),
    stats: () => api((a) => a.stats()),
    async resumeHeld() {
      const resumed = await api((a) => a.resumeHeld());
      if (resumed > 0) flushSoon({ force: true });
      return resumed;
    },
    async retry(id) {
      checkId(id);
      await api((a) => a.retry(id));
      flushSoon({ force: true });
    },
    discard: checked(checkId, (a, id) => a.discard(id)),
    conflicts: checked(checkLimit, (a, o) => a.conflicts(o)),
    async restore(conflictId) {
      checkId(conflictId, 'conflictId');
      // Safe to retry after a reconnect: a conflict's restore is one row, by a derived id.
      return written(await api((a) => a.restore(conflictId)));
    },
    receipts: checked(checkLimit, (a, o) => a.receipts(o)),
    receipt: checked(
      (v) => checkId(v, 'requestId'),
      (a, requestId) => a.receipt(requestId),
    ),
    async setAuth(headers, authOptions = {}) {
      checkHeaders(headers);
      checkAuthOptions(authOptions);
      auth = { headers, options: authOptions };
      await api((a) => a.setAuth(headers, authOptions));
    },
    close() {
      if (!closed) shutDown();
    },
  };
}

/** The first connection may wait for a fresh worker to install and activate: one more try. */
async function withRetry<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch {
    return attempt();
  }
}

/** An object that is not an array; false for a revoked proxy, whose every inspection throws. */
function isObject(value: unknown): value is Record<string, unknown> {
  try {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
