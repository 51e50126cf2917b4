import type { WatchUpdate } from '../shared/model/connection.ts';
import type { CollectionHandler } from '../shared/model/handler.ts';
import type { Json } from '../shared/model/json.ts';
import type { OutboxHealth, RowFilter, RowView } from '../shared/model/page-api.ts';
import type { RowStatus } from '../shared/model/row.ts';
import {
  overlayRecords,
  type RecordView,
  type ServerRecord,
} from '../shared/plan/record-overlay.ts';
import type { OutboxClient } from './connect.ts';
import { RecordFeed } from './record-feed.ts';

/**
 * The page API's live views as standard observables (SPEC §22), so a framework needs no glue:
 * a Svelte store (`subscribe(run) → unsubscribe`, `run` called at once with the current value)
 * and an interop observable for RxJS and others (`Symbol.observable` / `'@@observable'`,
 * `subscribe(observer) → { unsubscribe }`). One outbox subscription serves every subscriber of
 * one observable; it starts with the first and ends with the last.
 */

/** An observer as RxJS and the TC39 proposal pass it. */
export interface Observer<T> {
  next?(value: T): void;
  error?(error: unknown): void;
  complete?(): void;
}

/** What `subscribe` returns: a function (Svelte) that is also a subscription (RxJS). */
export type Unsubscribe = (() => void) & { unsubscribe(): void };

/**
 * A live value as a Svelte store and an interop observable. Its value is `undefined` until the
 * outbox has answered once: a function subscriber (Svelte's `run`) is called with it at once, as
 * the store contract asks; an observer object (RxJS) first hears the first real value.
 */
export interface OutboxObservable<T> {
  /** The latest value, `undefined` before the first answer or with no subscriber. */
  readonly current: T | undefined;
  subscribe(run: ((value: T | undefined) => void) | Observer<T>): Unsubscribe;
  /** The interop point RxJS's `from(...)` looks for. */
  [Symbol.observable](): OutboxObservable<T>;
  '@@observable'(): OutboxObservable<T>;
}

declare global {
  interface SymbolConstructor {
    readonly observable: symbol;
  }
}

/** `Symbol.observable` where a library has installed it, else RxJS's string fallback. */
const OBSERVABLE_KEY: symbol | '@@observable' =
  (typeof Symbol === 'function' && Symbol.observable) || '@@observable';

/**
 * An observable over a push source: `start(emit)` begins it and returns its stop. The source is
 * shared by every subscriber, started by the first and stopped after the last.
 */
export function outboxObservable<T>(
  start: (emit: (value: T) => void) => () => void,
): OutboxObservable<T> {
  const listeners = new Set<(value: T) => void>();
  let current: T | undefined;
  let stop: (() => void) | undefined;
  const emit = (value: T) => {
    current = value;
    for (const listener of [...listeners]) listener(value);
  };
  const observable = {
    get current() {
      return current;
    },
    subscribe(run: ((value: T | undefined) => void) | Observer<T>): Unsubscribe {
      const isFunction = typeof run === 'function';
      const listener = isFunction ? (value: T) => run(value) : (value: T) => run.next?.(value);
      listeners.add(listener);
      if (isFunction) run(current);
      else if (current !== undefined) run.next?.(current);
      if (stop === undefined) stop = start(emit);
      let done = false;
      const unsubscribe = () => {
        if (done) return;
        done = true;
        listeners.delete(listener);
        if (listeners.size === 0 && stop !== undefined) {
          const end = stop;
          stop = undefined;
          current = undefined;
          end();
        }
      };
      return Object.assign(unsubscribe, { unsubscribe });
    },
    [OBSERVABLE_KEY]() {
      return observable;
    },
  } as unknown as OutboxObservable<T>;
  if (OBSERVABLE_KEY !== '@@observable')
    (observable as unknown as Record<string, unknown>)['@@observable'] = () => observable;
  return observable;
}

/** The rows with their status (`outbox.subscribe`) as an observable: `rows$ = observeRows(outbox)`. */
export function observeRows(
  outbox: Pick<OutboxClient, 'subscribe'>,
  filter?: RowFilter,
): OutboxObservable<RowView[]> {
  return outboxObservable((emit) => outbox.subscribe(emit, filter));
}

/** Options of {@link observeHealth} and `useHealth`. */
export interface HealthOptions {
  /**
   * How often health is read again while rows wait (default 5 s): a stall shows no row change,
   * only time passing. With an empty outbox it is read only when rows change.
   */
  intervalMs?: number;
  /**
   * The page's watchdog (§23), on by default: when due rows are not being attempted
   * (`not_attempted`, `no_sender`) or the worker does not answer, ask for a flush — a message
   * to the worker, which starts a stopped one, or the page sender's flush. Respects backoff.
   */
  heal?: boolean;
}

/**
 * The queue's health (`outbox.health()`, SPEC §23) as an observable: read at once, after every
 * change of the rows, and every `intervalMs` while rows wait; never while the outbox is empty
 * and nothing changes. A failed read (a worker that does not answer) is tried again at the next
 * change or interval. While observed it is the page's watchdog (`heal`).
 */
export function observeHealth(
  outbox: Pick<OutboxClient, 'subscribe' | 'health' | 'flush'>,
  options: HealthOptions = {},
): OutboxObservable<OutboxHealth> {
  return outboxObservable((emit) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let reads = 0;
    let stopped = false;
    const read = () => {
      clearTimeout(timer);
      const n = ++reads;
      const again = (waiting: boolean) => {
        // Only the latest read arms the next one: answers that cross are not shown out of order.
        if (stopped || n !== reads) return false;
        if (waiting) timer = setTimeout(read, options.intervalMs ?? 5_000);
        return true;
      };
      const heal = () => {
        if (options.heal !== false) outbox.flush().catch(() => undefined);
      };
      outbox.health().then(
        (health) => {
          if (!again(health.total > 0)) return;
          emit(health);
          if (health.stalled === 'not_attempted' || health.stalled === 'no_sender') heal();
        },
        () => {
          if (again(true)) heal();
        },
      );
    };
    const stop = outbox.subscribe(read);
    // Read now too, not only when the view first answers: a call is what starts a stopped
    // worker, and a read that fails is tried again at the interval.
    read();
    return () => {
      stopped = true;
      clearTimeout(timer);
      stop();
    };
  });
}

/** Where one row stands: its status while it waits, then how it ended. */
export type RowProgress =
  | RowStatus
  /** The server applied it (its receipt exists). */
  | 'settled'
  /** Discarded, cancelled or superseded without a row to follow. */
  | 'removed'
  /** Gone with neither a receipt nor a tombstone. */
  | 'gone';

/** One row's progress (`outbox.watch`), following a row it was merged into, as an observable. */
export function observeRowProgress(
  outbox: Pick<OutboxClient, 'watch'>,
  id: string,
): OutboxObservable<RowProgress> {
  return outboxObservable((emit) =>
    outbox.watch(id, (update: WatchUpdate) => {
      if (update.type === 'row') emit(update.row.status);
      else if (update.type === 'receipt') emit('settled');
      else if (update.type === 'gone') emit('gone');
      else if (update.tombstone.into === undefined) emit('removed');
    }),
  );
}

/** Something that pushes values: a Svelte store, an RxJS observable, an {@link OutboxObservable}. */
export interface Subscribable<T> {
  subscribe(next: (value: T) => void): (() => void) | { unsubscribe(): void };
}

/** Options of {@link observeRecords} and the record hooks. */
export interface RecordOptions {
  /** The collection's merge rules, when the app overrides the defaults (SPEC §6). */
  handler?: Pick<CollectionHandler, 'coalesce'>;
}

/**
 * The app's records of one collection with the outbox's pending edits laid over them, as an
 * observable (`shared/plan/record-overlay.ts`): each record's value with its creates and updates
 * merged by the outbox's own rules, deleted ones left out, pending creates listed after the
 * app's, and one status per record; a settled edit's server answer stands in until the app's
 * data has it. `records` is the app's list, or a store or observable of it (its refetches).
 */
export function observeRecords<T = Json>(
  outbox: Pick<OutboxClient, 'subscribe' | 'receipt'>,
  collection: string,
  records: readonly ServerRecord<T>[] | Subscribable<readonly ServerRecord<T>[] | undefined>,
  options: RecordOptions = {},
): OutboxObservable<RecordView<T>[]> {
  return outboxObservable((emit) => {
    const feed = new RecordFeed(outbox, collection);
    let list: readonly ServerRecord<T>[] = Array.isArray(records) ? records : [];
    const update = () => {
      const state = feed.snapshot();
      if (state === undefined) return;
      emit(overlayRecords({ records: list, ...state, ...options }));
    };
    const source = Array.isArray(records)
      ? undefined
      : (records as Subscribable<readonly ServerRecord<T>[] | undefined>).subscribe((value) => {
          list = value ?? [];
          feed.records = list;
          update();
        });
    feed.records = list;
    const stop = feed.subscribe(update);
    return () => {
      stop();
      if (typeof source === 'function') source();
      else source?.unsubscribe();
    };
  });
}
