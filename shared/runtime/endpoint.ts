import { finalizer, releaseProxy } from 'comlink';
import type { OwnerApi } from '../core/outbox-api.ts';
import type { RowFeed } from '../core/row-feed.ts';
import {
  checkAuthOptions,
  checkFilter,
  checkHeaders,
  checkId,
  checkLimit,
  checkListener,
} from '../model/arguments.ts';
import type { EndpointApi, Hello, WatchUpdate } from '../model/connection.ts';
import type { RowView, StorageState } from '../model/page-api.ts';
import { planHealth } from '../plan/health.ts';
import { type Credentials, handOverCredentials } from './credentials.ts';
import { traceLines } from './flight-recorder.ts';
import type { Sender } from './sender.ts';

/**
 * One connection's API (SPEC §13), bound to one owner. Every argument that crosses the boundary
 * is checked here again (`model/arguments.ts`, the checks the page ran before posting); `enqueue`
 * input is validated by the core's owner API. Listener proxies are released when unsubscribed
 * and when the page releases the connection.
 */

/** What one connection's endpoint serves: an owner's API, its live views and credentials. */
export interface EndpointDeps {
  owner: string;
  holderId: string;
  bundle: string;
  api: OwnerApi;
  feed: RowFeed;
  credentials: Credentials;
  /** The sender's progress, bounds and recorder, for `health()` and `exportTrace()` (§23). */
  sender: Pick<Sender, 'clock' | 'progress' | 'bounds' | 'recorder'>;
  /** The store's change-notice channel, told to the page so it can notice a stopped worker. */
  changes?: string;
}

/** One connection's API, exposed over Comlink, and how to dispose of it. */
export interface Endpoint {
  readonly api: EndpointApi & { [finalizer]: () => void };
  dispose(): void;
}

/** Creates one connection's API for one owner, validating every argument that crosses the port. */
export function createEndpoint(deps: EndpointDeps): Endpoint {
  const { api, owner } = deps;
  const subscriptions = new Map<string, { stop: () => void; listener: unknown }>();
  let nextId = 1;
  let disposed = false;

  // A dead page never answers the release; nothing waits on it.
  const release = (listener: unknown) =>
    (listener as { [releaseProxy]?: () => void })[releaseProxy]?.();
  const track = (stop: () => void, listener: unknown) => {
    const id = `s${nextId++}`;
    subscriptions.set(id, { stop, listener });
    return id;
  };
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    for (const { stop, listener } of subscriptions.values()) {
      stop();
      release(listener);
    }
    subscriptions.clear();
    deps.feed.close();
  };

  const endpoint: EndpointApi & { [finalizer]: () => void } = {
    async hello(): Promise<Hello> {
      return {
        holderId: deps.holderId,
        owner,
        bundle: deps.bundle,
        ...(deps.changes === undefined ? {} : { changes: deps.changes }),
      };
    },
    enqueue: (input) => api.enqueue(input),
    rows: async (filter) => api.rows(checkFilter(filter)),
    row: async (id) => api.row(checkId(id)),
    stats: () => api.stats(),
    resumeHeld: () => api.resumeHeld(),
    retry: async (id) => api.retry(checkId(id)),
    discard: async (id) => api.discard(checkId(id)),
    conflicts: async (options) => api.conflicts(checkLimit(options)),
    restore: async (conflictId) => api.restore(checkId(conflictId, 'conflictId')),
    receipts: async (options) => api.receipts(checkLimit(options)),
    receipt: async (requestId) => api.receipt(checkId(requestId, 'requestId')),
    async health() {
      const { sender, holderId } = deps;
      const [views, storage] = await Promise.all([api.rows(), storageState()]);
      return planHealth({
        now: sender.clock.now(),
        views,
        progress: sender.progress(),
        senders: { [holderId.startsWith('sw-') ? 'worker' : 'page']: holderId },
        storage,
        bounds: sender.bounds,
      });
    },
    async exportTrace(options) {
      const entries = deps.sender.recorder.entries();
      if ((options as { payloads?: unknown } | undefined)?.payloads === true) {
        for (const [i, entry] of entries.entries()) {
          // Payloads of this owner's rows only: `row` answers nothing for another owner's id.
          const view = typeof entry.id === 'string' ? await api.row(entry.id) : undefined;
          if (view) entries[i] = { ...entry, payload: view.row.payload };
        }
      }
      return traceLines(entries);
    },
    async subscribe(listener, filter) {
      const deliver = checkListener<(rows: RowView[]) => unknown>(listener);
      return track(deps.feed.subscribe(checkFilter(filter), deliver), listener);
    },
    async watch(id, listener) {
      const deliver = checkListener<(update: WatchUpdate) => unknown>(listener);
      return track(deps.feed.watch(checkId(id), deliver), listener);
    },
    async unsubscribe(subscriptionId) {
      const entry = subscriptions.get(checkId(subscriptionId, 'subscriptionId'));
      if (entry === undefined) return;
      subscriptions.delete(subscriptionId);
      entry.stop();
      release(entry.listener);
    },
    async setAuth(headers, options) {
      await handOverCredentials(
        deps.credentials,
        api,
        owner,
        checkHeaders(headers),
        checkAuthOptions(options) ?? {},
      );
    },
    // Comlink calls this when the page releases its proxy (client `close()`).
    [finalizer]: dispose,
  };
  return { api: endpoint, dispose };
}

/** What the browser says of this origin's storage (§23); empty where the API is missing. */
async function storageState(): Promise<StorageState> {
  const storage = globalThis.navigator?.storage;
  try {
    const { usage, quota } = (await storage?.estimate?.()) ?? {};
    return { persisted: await storage?.persisted?.(), usage, quota };
  } catch {
    return {};
  }
}
