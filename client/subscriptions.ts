import type { EndpointApi, WatchUpdate } from '../shared/model/connection.ts';
import type { RowFilter, RowView } from '../shared/model/page-api.ts';

/**
 * The page's subscriptions, kept on the client so they outlive a connection (SPEC §13: subscribe
 * re-subscribes after a reconnect). Each is attached to whichever API serves the page now — a
 * worker connection or the page sender — and attached again after every new connection.
 */

type Entry =
  | {
      kind: 'rows';
      filter: RowFilter | undefined;
      listener: (rows: RowView[]) => void;
      remote?: Attached;
    }
  | { kind: 'watch'; id: string; listener: (update: WatchUpdate) => void; remote?: Attached };

interface Attached {
  api: EndpointApi;
  subscriptionId: string;
}

/** Makes a listener callable from the API's side (a Comlink proxy for a worker). */
export type ListenerWrapper = <F extends (value: never) => void>(listener: F) => F;

/** The page's live views, kept across reconnects: each is subscribed again on a new connection. */
export class Subscriptions {
  readonly #entries = new Set<Entry>();
  #api: EndpointApi | undefined;
  #wrap: ListenerWrapper = (listener) => listener;
  #check: (() => void) | undefined;

  /** How many live views (subscriptions and watches) are open. */
  get size(): number {
    return this.#entries.size;
  }

  /** Adds a rows subscription; the returned function ends it. */
  rows(filter: RowFilter | undefined, listener: (rows: RowView[]) => void): () => void {
    return this.#add({ kind: 'rows', filter, listener });
  }

  /** Watches one row; the watch ends by itself once the row is settled or gone. */
  watch(id: string, listener: (update: WatchUpdate) => void): () => void {
    const entry: Entry = {
      kind: 'watch',
      id,
      listener: (update) => {
        const follows = update.type === 'removed' && update.tombstone.into !== undefined;
        if (update.type !== 'row' && !follows) this.#entries.delete(entry);
        listener(update);
      },
    };
    return this.#add(entry);
  }

  /**
   * Attaches every subscription to a new API (after connect, reconnect or a mode switch).
   * `check` runs when a view is added to it later: a worker's port may have outlived its instance,
   * and the view's first delivery is what tells.
   */
  attach(api: EndpointApi, wrap: ListenerWrapper, check?: () => void): void {
    this.#api = api;
    this.#wrap = wrap;
    this.#check = check;
    for (const entry of this.#entries) void this.#attachOne(entry);
  }

  clear(): void {
    for (const entry of this.#entries) this.#detach(entry);
    this.#entries.clear();
    this.#api = undefined;
  }

  #add(entry: Entry): () => void {
    this.#entries.add(entry);
    if (this.#api !== undefined) {
      void this.#attachOne(entry);
      this.#check?.();
    }
    return () => {
      this.#entries.delete(entry);
      this.#detach(entry);
    };
  }

  async #attachOne(entry: Entry): Promise<void> {
    const api = this.#api;
    if (api === undefined) return;
    try {
      const subscriptionId =
        entry.kind === 'rows'
          ? await api.subscribe(this.#wrap(entry.listener), entry.filter)
          : await api.watch(entry.id, this.#wrap(entry.listener));
      entry.remote = { api, subscriptionId };
      // Ended while attaching: undo it on the API that now holds it.
      if (!this.#entries.has(entry)) this.#detach(entry);
    } catch {
      // A dead connection: the next reconnect attaches it again.
    }
  }

  #detach(entry: Entry): void {
    const remote = entry.remote;
    entry.remote = undefined;
    remote?.api.unsubscribe(remote.subscriptionId).catch(() => undefined);
  }
}
