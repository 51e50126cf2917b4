import type { WatchUpdate } from '../model/connection.ts';
import { deepEqual } from '../model/json.ts';
import type { OutboxApi, RowFilter, RowView } from '../model/page-api.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { ChangeNotice, OutboxStore } from '../model/store.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { OwnerApi } from './outbox-api.ts';

/**
 * Live views of one owner's rows for `subscribe` and `watch` (SPEC §13), driven by the store's
 * change notices (one per committed transaction, §3). Each listener gets at most one call per
 * notice; while a call is being delivered, later notices fold into one more read, so a slow page
 * never builds a backlog. Used by the worker's endpoint and by the page sender alike.
 */

export type Deliver<T> = (value: T) => unknown;

/** Past this many changed rows, one read of the whole filter is cheaper than a read per row. */
const FULL_READ_ABOVE = 200;

/** Live views of one owner's rows: `subscribe` and `watch` (§13). */
export interface RowFeed {
  subscribe(filter: RowFilter | undefined, listener: Deliver<RowView[]>): () => void;
  /** Follows one row until it ends in a receipt, a tombstone without successor, or nothing. */
  watch(id: string, listener: Deliver<WatchUpdate>): () => void;
  close(): void;
}

interface Pump {
  /** Whether a notice concerns this listener. */
  wants(notice: ChangeNotice): boolean;
  dirty: boolean;
  running: boolean;
  closed: boolean;
  step(): Promise<void>;
}

/** Creates the live views of one owner over its owner API and the store's change notices. */
export function createRowFeed(api: OwnerApi, store: OutboxStore, owner: string): RowFeed {
  const pumps = new Set<Pump>();

  const kick = (pump: Pump) => {
    pump.dirty = true;
    if (pump.running) return;
    pump.running = true;
    void (async () => {
      while (pump.dirty && !pump.closed) {
        pump.dirty = false;
        try {
          await pump.step();
        } catch {
          // A failed read or a dead listener must not stop the feed; the next notice retries.
        }
      }
      pump.running = false;
    })();
  };

  const stopListening = store.onChange((notice) => {
    if (notice.owner !== owner) return;
    for (const pump of pumps) if (pump.wants(notice)) kick(pump);
  });

  const add = (pump: Pump) => {
    pumps.add(pump);
    kick(pump);
    return () => {
      pump.closed = true;
      pumps.delete(pump);
    };
  };

  return {
    subscribe(filter, listener) {
      return add(rowsPump(api, store, owner, filter, listener));
    },

    watch(id, listener) {
      let current = id;
      let last: WatchUpdate | undefined;
      const pump: Pump = {
        wants: (notice) => notice.ids.includes(current),
        dirty: false,
        running: false,
        closed: false,
        async step() {
          const update = await watchStep(api, store, owner, current);
          if (last !== undefined && deepEqual(update, last)) return;
          last = update;
          if (pump.closed) return;
          await listener(update);
          if (update.type === 'removed' && update.tombstone.into !== undefined) {
            current = update.tombstone.into;
            pump.dirty = true;
          } else if (update.type !== 'row') {
            pump.closed = true;
            pumps.delete(pump);
          }
        },
      };
      return add(pump);
    },

    close() {
      stopListening();
      for (const pump of pumps) pump.closed = true;
      pumps.clear();
    },
  };
}

/** The pump of one `subscribe`: the filter's rows, read again only where a notice names them. */
function rowsPump(
  api: OwnerApi,
  store: OutboxStore,
  owner: string,
  filter: RowFilter | undefined,
  listener: Deliver<RowView[]>,
): Pump {
  let last: RowView[] | undefined;
  // The filter's rows as last read, kept up to date from the ids each notice names: a commit
  // costs reads of the rows it touched, not of the whole outbox. Cleared after a failed read,
  // so the next step reads everything again.
  let cache: Map<string, OutboxRow> | undefined;
  let changed = new Set<string>();
  const matches = (row: OutboxRow) =>
    row.owner === owner &&
    (filter?.collection === undefined || row.collection === filter.collection) &&
    (filter?.targetId === undefined || row.targetId === filter.targetId);
  const refresh = async (): Promise<RowView[]> => {
    const ids = changed;
    changed = new Set();
    if (cache === undefined || ids.size > FULL_READ_ABOVE) {
      const views = await api.rows(filter);
      cache = new Map(views.map((view) => [view.id, view.row as OutboxRow]));
      return views;
    }
    const rows = cache;
    const changedIds = [...ids];
    const raws = await store.getMany(changedIds, owner);
    for (const [i, id] of changedIds.entries()) {
      const observed = raws[i] === undefined ? undefined : observeStored(decodeRow(raws[i]));
      if (observed !== undefined && matches(observed.row)) rows.set(id, observed.row);
      else rows.delete(id);
    }
    return api.viewsOf([...rows.values()].sort(queueOrder));
  };
  const pump: Pump = {
    wants: (notice) => {
      for (const id of notice.ids) changed.add(id);
      return notice.ids.length > 0;
    },
    dirty: false,
    running: false,
    closed: false,
    async step() {
      let rows: RowView[];
      try {
        rows = await refresh();
      } catch (error) {
        cache = undefined;
        throw error;
      }
      if (last !== undefined && deepEqual(rows, last)) return;
      last = rows;
      if (!pump.closed) await listener(rows);
    },
  };
  return pump;
}

/** The row if it exists, else its receipt (row id = request id, §2), else its tombstone. */
async function watchStep(
  api: OutboxApi,
  store: OutboxStore,
  owner: string,
  id: string,
): Promise<WatchUpdate> {
  const row = await api.row(id);
  if (row !== undefined) return { type: 'row', row };
  const receipt = await api.receipt(id);
  if (receipt !== undefined) return { type: 'receipt', receipt };
  const tombstone = await store.getTombstone(id, owner);
  if (tombstone !== undefined && tombstone.owner === owner) return { type: 'removed', tombstone };
  return { type: 'gone', id };
}

/** The outbox's queue order (`[savedAt, id]`, the order `scan` reads in). */
function queueOrder(a: OutboxRow, b: OutboxRow): number {
  return a.savedAt - b.savedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
