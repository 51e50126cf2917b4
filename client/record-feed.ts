import type { RowView } from '../shared/model/page-api.ts';
import type { Receipt } from '../shared/model/store.ts';
import type { ServerRecord, SettledEdit } from '../shared/plan/record-overlay.ts';
import { standsIn } from '../shared/plan/record-overlay.ts';
import type { OutboxClient } from './connect.ts';

/**
 * What the record overlay needs from the outbox for one collection, kept live: its rows, and the
 * edits the server applied since (with their receipts), so a settled edit's answer stands in for
 * its record until the app's data catches up (`shared/plan/record-overlay.ts`). A row that
 * leaves the outbox is kept as it was last seen until its receipt is read, so there is no moment
 * between the two in which the record shows its old value.
 */

/** The state of a {@link RecordFeed}: a new object after every change. */
export interface RecordFeedState {
  /** The collection's rows, and those that left the outbox while their receipt is read. */
  rows: RowView[];
  /** Rows the server applied, in the order they settled. */
  settled: SettledEdit[];
}

/** How many settled creates are kept after they stop standing in, for their pending names. */
const KEPT_CREATES = 500;

/** One collection's rows and settled edits, live, for the record overlay. */
export class RecordFeed {
  readonly #outbox: Pick<OutboxClient, 'subscribe' | 'receipt'>;
  readonly #collection: string;
  readonly #listeners = new Set<() => void>();
  #stop: (() => void) | undefined;
  #rows: RowView[] | undefined;
  readonly #leaving = new Map<string, RowView>();
  #settled: SettledEdit[] = [];
  #state: RecordFeedState | undefined;
  /** The app's records now: what a receipt noted later is compared with (`seen`). */
  records: readonly ServerRecord<unknown>[] = [];

  constructor(outbox: Pick<OutboxClient, 'subscribe' | 'receipt'>, collection: string) {
    this.#outbox = outbox;
    this.#collection = collection;
  }

  /** The state now; undefined until the outbox has answered once (or with no listener). */
  readonly snapshot = (): RecordFeedState | undefined => this.#state;

  /** Listens for changes; the first listener starts the outbox subscription, the last ends it. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    if (this.#stop === undefined)
      this.#stop = this.#outbox.subscribe((rows) => this.#onRows(rows), {
        collection: this.#collection,
      });
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size > 0 || this.#stop === undefined) return;
      const stop = this.#stop;
      this.#stop = undefined;
      this.#rows = undefined;
      this.#state = undefined;
      this.#leaving.clear();
      stop();
    };
  };

  #onRows(rows: RowView[]): void {
    const now = new Set(rows.map((view) => view.id));
    for (const view of this.#rows ?? []) {
      const requestId = view.row.request?.requestId;
      // An intent has no request: it leaves by conversion, and its converted row is in `rows`.
      if (now.has(view.id) || requestId === undefined || this.#leaving.has(view.id)) continue;
      this.#leaving.set(view.id, view);
      this.#outbox.receipt(requestId).then(
        (receipt) => this.#left(view, receipt),
        () => this.#left(view, undefined),
      );
    }
    this.#rows = rows;
    this.#changed();
  }

  /** A row left the outbox: applied (a 2xx receipt), or merged, cancelled or discarded. */
  #left(view: RowView, receipt: Receipt | undefined): void {
    if (!this.#leaving.delete(view.id) || this.#stop === undefined) return;
    if (receipt !== undefined && receipt.status >= 200 && receipt.status < 300) {
      const name = receipt.serverId ?? view.row.targetId;
      const seen = this.records.find((record) => record.id === name);
      this.#settled = [
        ...this.#settled,
        { row: view.row, receipt, ...(seen === undefined ? {} : { seen }) },
      ];
    }
    this.#changed();
  }

  #changed(): void {
    if (this.#rows === undefined) return;
    this.#prune();
    this.#state = { rows: [...this.#rows, ...this.#leaving.values()], settled: this.#settled };
    for (const listener of [...this.#listeners]) listener();
  }

  /**
   * Forgets settled edits the app's data has caught up with, but keeps the creates among them
   * (a bounded number) so that a record keeps the key of its pending name.
   */
  #prune(): void {
    const byId = new Map(this.records.map((record) => [record.id, record]));
    const kept = this.#settled.filter(
      (edit) =>
        edit.row.kind === 'create' ||
        standsIn(edit, byId.get(edit.receipt.serverId ?? edit.row.targetId)),
    );
    const creates = kept.filter((edit) => edit.row.kind === 'create');
    const over = creates.length - KEPT_CREATES;
    this.#settled = over > 0 ? kept.filter((edit) => !creates.slice(0, over).includes(edit)) : kept;
  }
}
