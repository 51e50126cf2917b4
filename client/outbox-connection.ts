import { proxy } from 'comlink';
import {
  type EndpointApi,
  isOutboxMessage,
  type SetAuthOptions,
  STARTED_MESSAGE,
  type StartedMessage,
} from '../shared/model/connection.ts';
import { OutboxError } from '../shared/model/errors.ts';
import type { FlushOptions, FlushReport } from '../shared/model/page-api.ts';
import type { ChangeNotice } from '../shared/model/store.ts';
import { WorkerChannel } from './channel.ts';
import { flushViaWorker } from './flush-message.ts';
import type { PageSender, PageSenderOption } from './page-sender.ts';
import type { Registered } from './registration.ts';
import type { Subscriptions } from './subscriptions.ts';
import { withTimeout } from './timeout.ts';

/**
 * What serves the page (SPEC §12, §13, §13.1): its service worker through a
 * {@link WorkerChannel}, or the page sender while no worker controls the page — and the handover
 * from one to the other. Every call goes to whichever serves the page now; after each new
 * connection to a worker, what the old one carried (credentials, live views) is restored.
 */

/** A flush's options, with `linger` for an enqueue's flush, which may wait to fill a batch. */
export type FlushRequest = FlushOptions & { linger?: boolean };

/** The options of `connectOutbox` that the connection reads (SPEC §13). */
export interface OutboxConnectionOptions {
  /** The account whose rows this page works with (G6). */
  owner: string;
  /** Every call's timeout; default 5 s. */
  timeoutMs?: number;
  /** How long a flush waits for the worker's report; default 60 s. */
  flushTimeoutMs?: number;
  /** Run the outbox in the tab while no worker controls the page (§12); see `ConnectOptions`. */
  pageSender?: PageSenderOption;
}

/** The page's connection to its outbox, kept across worker restarts and the page sender's handover. */
export interface OutboxConnection {
  /** Who serves the page right now: its service worker, or the page sender. */
  readonly mode: 'worker' | 'page';
  /** Runs `call` on the API that serves the page now; fails with `closed` after {@link close}. */
  call<T>(call: (api: EndpointApi) => Promise<T>): Promise<T>;
  /** Flushes through whatever serves the page, and resolves with its reports. */
  flush(options?: FlushRequest): Promise<FlushReport[]>;
  /** Starts a flush nobody waits for; its failure is the next flush's to report. */
  flushSoon(options?: FlushRequest): void;
  /** Hands credentials to the sender now and after every reconnect (§13). */
  setAuth(headers: Record<string, string> | null, options: SetAuthOptions): Promise<void>;
  /** Stops listening and ends the connection; every later call fails with `closed`. */
  close(): void;
}

/**
 * Opens the page's connection: listens to the worker `container` and the page, then connects to
 * the worker — or starts the page sender when no worker controls the page and the page has one
 * (§12) — and flushes what waited. Everything is closed again if that fails. `subscriptions` are
 * the live views, attached again to whatever serves the page after each connection.
 */
export async function openOutboxConnection(
  options: OutboxConnectionOptions,
  container: ServiceWorkerContainer | undefined,
  registered: Registered | undefined,
  subscriptions: Subscriptions,
): Promise<OutboxConnection> {
  const { owner } = options;
  let auth: { headers: Record<string, string> | null; options: SetAuthOptions } | undefined;
  let pageSender: PageSender | undefined;
  let closed = false;
  let changes: BroadcastChannel | undefined;

  const timeoutMs = options.timeoutMs ?? 5000;
  const channel = new WorkerChannel({
    owner,
    timeoutMs,
    target: () => workerOf(container, registered),
    onConnect(link) {
      const api = link.remote as unknown as EndpointApi;
      // A new connection starts empty: restore credentials, then subscriptions.
      if (auth !== undefined) api.setAuth(auth.headers, auth.options).catch(() => undefined);
      // A view added later is checked as a change notice is: its first delivery says it runs.
      const check = () => channel.noteChange();
      subscriptions.attach(api, (listener) => proxy(channel.heard(listener)), check);
      changes ??= hearChanges(link.hello.changes, owner, () => {
        if (pageSender === undefined && subscriptions.size > 0) channel.noteChange();
      });
    },
  });

  const api = async <T>(call: (api: EndpointApi) => Promise<T>): Promise<T> => {
    if (closed) throw new OutboxError('closed');
    // The page sender's store may never open (an upgrade blocked by another tab): bounded too.
    if (pageSender !== undefined) return withTimeout(pageSender.api().then(call), timeoutMs);
    try {
      return await channel.call((remote) => call(remote as unknown as EndpointApi));
    } catch (error) {
      throw postable(error);
    }
  };
  const flush = async (flushOptions: FlushRequest = {}): Promise<FlushReport[]> => {
    if (closed) throw new OutboxError('closed');
    if (pageSender !== undefined) return pageSender.flush(flushOptions);
    const { worker } = await channel.ensure();
    return flushViaWorker(worker, owner, flushOptions, options.flushTimeoutMs ?? 60_000);
  };
  const flushSoon = (flushOptions: FlushRequest = {}) =>
    void flush(flushOptions).catch(() => undefined);

  // A worker took control (first install, update, or a page sender's tab): hand over to it.
  const onControllerChange = () => {
    channel.drop();
    if (pageSender !== undefined) {
      pageSender.stop();
      pageSender = undefined;
    }
    void channel.ensure().catch(() => undefined);
  };
  const onWorkerMessage = (event: MessageEvent) => {
    const holderId = pageSender === undefined ? startedHolder(event) : undefined;
    if (holderId !== undefined) channel.noteStart(holderId);
  };
  const stopListening = listenToPage(
    container,
    onControllerChange,
    onWorkerMessage,
    () => flushSoon({ force: true }),
    () => {
      if (document.visibilityState === 'visible') flushSoon();
    },
  );

  const shutDown = () => {
    closed = true;
    stopListening();
    changes?.close();
    subscriptions.clear();
    pageSender?.stop();
    channel.close();
  };

  try {
    if (!container?.controller && options.pageSender !== undefined) {
      // Loaded only here: the page sender carries the whole core, which a page that a worker
      // controls never needs.
      const { startPageSender } = await import('./page-sender.ts');
      const config = options.pageSender;
      pageSender = startPageSender(typeof config === 'function' ? await config() : config, owner);
      subscriptions.attach(await api(async (a) => a), (listener) => listener); // bounded (§13)
      // Control may have arrived while the page sender opened; its event has fired by now.
      if (container?.controller) onControllerChange();
      else flushSoon();
    } else {
      // The first connection may wait for a fresh worker to install and activate: one more try.
      await channel.ensure().catch(() => channel.ensure());
      // Opening the app is when rows that waited (offline, on backoff, for a browser without
      // Background Sync) should go: a non-forced flush, so backoff still holds (§12).
      flushSoon();
    }
  } catch (error) {
    shutDown();
    throw error;
  }

  return {
    get mode() {
      return pageSender === undefined ? 'worker' : 'page';
    },
    call: api,
    flush,
    flushSoon,
    async setAuth(headers, authOptions) {
      auth = { headers, options: authOptions };
      await api((a) => a.setAuth(headers, authOptions));
    },
    close() {
      if (!closed) shutDown();
    },
  };
}

/**
 * Listens to the worker container (a new controller, a worker's messages) and to the page (back
 * online, visible again); returns the function that stops listening.
 */
function listenToPage(
  container: ServiceWorkerContainer | undefined,
  onControllerChange: () => void,
  onWorkerMessage: (event: MessageEvent) => void,
  onOnline: () => void,
  onVisible: () => void,
): () => void {
  container?.addEventListener('controllerchange', onControllerChange);
  container?.addEventListener('message', onWorkerMessage);
  // Messages from the worker wait in a queue until the page opts in; before the document has
  // parsed it would otherwise hold back a start announcement.
  container?.startMessages();
  // A page's window and document: the page API runs in windows only.
  addEventListener('online', onOnline);
  document.addEventListener('visibilitychange', onVisible);
  return () => {
    container?.removeEventListener('controllerchange', onControllerChange);
    container?.removeEventListener('message', onWorkerMessage);
    removeEventListener('online', onOnline);
    document.removeEventListener('visibilitychange', onVisible);
  };
}

/**
 * The store's commit notices (§3) of the page's owner: each goes to `onNotice`, so that live
 * views notice a stopped worker (§13.1), and one that held rows for credentials is announced on
 * the page at once as `outbox-held` (§23, `held-event.ts`). The channel's name comes from the
 * worker, which knows its database; undefined without a name or where there is no
 * BroadcastChannel.
 */
function hearChanges(
  name: string | undefined,
  owner: string,
  onNotice: () => void,
): BroadcastChannel | undefined {
  if (!name || typeof BroadcastChannel !== 'function') return undefined;
  const changes = new BroadcastChannel(name);
  changes.onmessage = ({ data }: MessageEvent<Partial<ChangeNotice> | null>) => {
    if (data?.owner !== owner) return;
    if (data.reason === 'held') dispatchEvent(new CustomEvent('outbox-held', { detail: data }));
    onNotice();
  };
  return changes;
}

/**
 * The worker to talk to now: the controller, else the registration's active worker — or, while
 * there is none yet, the first one once it is active (./first-worker.ts, loaded only then), which
 * fails at once, with the browser's reason, when none will come.
 */
async function workerOf(
  container: ServiceWorkerContainer | undefined,
  registered: Registered | undefined,
): Promise<ServiceWorker> {
  if (container?.controller) return container.controller;
  const registration = await registered?.registration;
  return (
    container?.controller ??
    registration?.active ??
    (await import('./first-worker.ts')).default(registered, registration, OutboxError)
  );
}

/**
 * The holder id of a worker instance that announced its start (§13.1), if `event` is that. An
 * update's new worker also runs its script while it installs, beside the active one: that
 * handover is controllerchange's, so only an active worker's announcement counts.
 */
function startedHolder(event: MessageEvent): string | undefined {
  if (!isOutboxMessage<StartedMessage>(event.data, STARTED_MESSAGE)) return undefined;
  // `activating` or `activated`; a source without a state is no worker of an update.
  const state = (event.source as ServiceWorker | null)?.state;
  return state === undefined || state.startsWith('activat') ? event.data.holderId : undefined;
}

/** What the checks cannot see (a proxy around a plain object) still cannot be posted. */
function postable(error: unknown): unknown {
  const e = error as Error | null;
  return e?.name === 'DataCloneError'
    ? new OutboxError('invalid_value', `an argument cannot be sent to the worker: ${e.message}`)
    : error;
}
