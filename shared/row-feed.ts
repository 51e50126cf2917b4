import type { WatchUpdate } from './connection.ts';
import { deepEqual } from './json.ts';
import type { OutboxApi, RowFilter, RowView } from './protocol.ts';
import type { ChangeNotice, OutboxStore } from './store/types.ts';

/**
 * Live views of one owner's rows for `subscribe` and `watch` (SPEC §13), driven by the store's
 * change notices (one per committed transaction, §3). Each listener gets at most one call per
 * notice; while a call is being delivered, later notices fold into one more read, so a slow page
 * never builds a backlog. Used by the worker's endpoint and by the page sender alike.
 */

export type Deliver<T> = (value: T) => unknown;

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

export function createRowFeed(api: OutboxApi, store: OutboxStore, owner: string): RowFeed {
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
      let last: RowView[] | undefined;
      const pump: Pump = {
        wants: () => true,
        dirty: false,
        running: false,
        closed: false,
        async step() {
          const rows = await api.rows(filter);
          if (last !== undefined && deepEqual(rows, last)) return;
          last = rows;
          if (!pump.closed) await listener(rows);
        },
      };
      return add(pump);
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
  const tombstone = await store.getTombstone(id);
  if (tombstone !== undefined && tombstone.owner === owner) return { type: 'removed', tombstone };
  return { type: 'gone', id };
}
