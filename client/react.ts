import {
  createContext,
  createElement,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
} from 'react';
import type { Json } from '../shared/model/json.ts';
import type { OutboxHealth, RowFilter, RowView } from '../shared/model/page-api.ts';
import {
  overlayRecord,
  overlayRecords,
  type RecordView,
  type ServerRecord,
} from '../shared/plan/record-overlay.ts';
import { type ConnectOptions, connectOutbox, type OutboxClient } from './connect.ts';
import {
  type HealthOptions,
  type OutboxObservable,
  observeHealth,
  observeRowProgress,
  observeRows,
  type RecordOptions,
  type RowProgress,
} from './observable.ts';
import { RecordFeed, type RecordFeedState } from './record-feed.ts';

/**
 * `sw-outbox/react`: React hooks over the page API's live views (SPEC §22), with React as an
 * optional peer dependency. Each hook is `useSyncExternalStore` over one of the outbox's live
 * views (the observables of `observable.ts`, or for records the `RecordFeed` they share), so what
 * it shows is the outbox's own live view (worker restarts included, §13.1) and a render never
 * sees a torn value.
 *
 * ```tsx
 * root.render(
 *   <OutboxProvider outbox={{ swUrl: '/sw.js', owner }} fallback={<p>Connecting…</p>}>
 *     <App />
 *   </OutboxProvider>,
 * );
 * // in a component: the server's list with my pending edits laid over it
 * const notes = useRecords('notes', data?.map((n) => ({ id: n.id, revision: n.revision, value: n })));
 * const pending = usePendingCount();
 * ```
 */

const OutboxContext = createContext<OutboxClient | undefined>(undefined);

/** Props of {@link OutboxProvider}. */
export interface OutboxProviderProps {
  /**
   * The outbox: a connected one, a promise of one (`connectOutbox(…)`), or the options to
   * connect with — then the provider connects, again only when `swUrl`, `scope`, `type` or
   * `owner` change, and closes what it opened when it unmounts or connects anew.
   */
  outbox: OutboxClient | PromiseLike<OutboxClient> | ConnectOptions;
  /** What renders while connecting. Nothing by default. */
  fallback?: ReactNode;
  /** What renders when connecting failed; without it the error is thrown to an error boundary. */
  onError?: (error: unknown) => ReactNode;
  children?: ReactNode;
}

/** Where the connection for one `key` (what the provider was given) stands. */
type Connection =
  | { state: 'connecting'; key?: unknown }
  | { state: 'ready'; key: unknown; outbox: OutboxClient }
  | { state: 'failed'; key: unknown; error: unknown };

const isClient = (value: OutboxProviderProps['outbox']): value is OutboxClient =>
  typeof (value as Partial<OutboxClient>).enqueue === 'function';
const isPromise = (value: OutboxProviderProps['outbox']): value is PromiseLike<OutboxClient> =>
  typeof (value as Partial<PromiseLike<unknown>>).then === 'function';

/**
 * Makes an outbox available to the hooks below it; renders `fallback` while it connects and
 * `onError(error)` if that fails.
 */
export function OutboxProvider({
  outbox,
  fallback = null,
  onError,
  children,
}: OutboxProviderProps): ReactNode {
  const [connection, setConnection] = useState<Connection>({ state: 'connecting' });
  // Options are often written inline, a new object every render: connect again only when what
  // they connect to changes (the worker, its scope, the owner), with the latest options.
  const latest = useRef(outbox);
  latest.current = outbox;
  const key =
    isClient(outbox) || isPromise(outbox)
      ? outbox
      : [outbox.swUrl, outbox.scope, outbox.type, outbox.owner].join('\n');
  useEffect(() => {
    const target = latest.current;
    if (isClient(target)) return;
    let live = true;
    // Only an outbox the provider opened is the provider's to close.
    const opened = isPromise(target) ? undefined : connectOutbox(target);
    Promise.resolve(opened ?? (target as PromiseLike<OutboxClient>)).then(
      (client) => {
        if (live) setConnection({ state: 'ready', key, outbox: client });
      },
      (error: unknown) => {
        if (live) setConnection({ state: 'failed', key, error });
      },
    );
    return () => {
      live = false;
      void opened?.then((client) => client.close()).catch(() => undefined);
    };
  }, [key]);
  // A connection made for what the provider was given before is not this one's.
  const current: Connection = isClient(outbox)
    ? { state: 'ready', key, outbox }
    : connection.key === key
      ? connection
      : { state: 'connecting' };
  if (current.state === 'connecting') return fallback;
  if (current.state === 'failed') {
    if (onError === undefined) throw current.error;
    return onError(current.error);
  }
  return createElement(OutboxContext.Provider, { value: current.outbox }, children);
}

/** The outbox of the nearest {@link OutboxProvider}; throws outside one. */
export function useOutbox(): OutboxClient {
  const outbox = useContext(OutboxContext);
  if (outbox === undefined)
    throw new Error('useOutbox needs an <OutboxProvider outbox={…}> above this component');
  return outbox;
}

function useObservable<T>(observable: OutboxObservable<T>): T | undefined {
  // Stable per observable: a new `subscribe` each render would end and restart the live view.
  const subscribe = useCallback(
    (onChange: () => void) => observable.subscribe({ next: onChange }),
    [observable],
  );
  const snapshot = useCallback(() => observable.current, [observable]);
  return useSyncExternalStore(subscribe, snapshot, noSnapshot);
}

/** On the server there is no outbox: nothing to show yet. */
const noSnapshot = () => undefined;

/**
 * The rows (with their display status) that match `filter`, live; `undefined` until the outbox
 * has answered once. A new filter object with the same fields keeps the same subscription.
 */
export function useRows(filter?: RowFilter): RowView[] | undefined {
  const outbox = useOutbox();
  const collection = filter?.collection;
  const targetId = filter?.targetId;
  const rows = useMemo(
    () =>
      observeRows(outbox, {
        ...(collection === undefined ? {} : { collection }),
        ...(targetId === undefined ? {} : { targetId }),
      }),
    [outbox, collection, targetId],
  );
  return useObservable(rows);
}

/**
 * Where one row stands, live: its display status while it waits (`queued`, `sending`, `held`,
 * `blocked`, …), then `settled` once the server applied it, or `removed` / `gone`. A row merged
 * into a later one follows that row. `undefined` until the outbox has answered.
 */
export function useRowStatus(id: string): RowProgress | undefined {
  const outbox = useOutbox();
  const progress = useMemo(() => observeRowProgress(outbox, id), [outbox, id]);
  return useObservable(progress);
}

/** How many rows are still in the outbox (any status), live; `undefined` until it answered. */
export function usePendingCount(filter?: RowFilter): number | undefined {
  return useRows(filter)?.length;
}

/**
 * The queue's health (SPEC §23), live: `stalled` names why due rows are not going out, for a
 * banner the app shows; `undefined` until the outbox has answered once. While mounted it is the
 * page's watchdog too (see `HealthOptions.heal`).
 */
export function useHealth(options: HealthOptions = {}): OutboxHealth | undefined {
  const outbox = useOutbox();
  const { intervalMs, heal } = options;
  const health = useMemo(
    () =>
      observeHealth(outbox, {
        ...(intervalMs === undefined ? {} : { intervalMs }),
        ...(heal === undefined ? {} : { heal }),
      }),
    [outbox, intervalMs, heal],
  );
  return useObservable(health);
}

/** The collection's rows and settled edits, live, for one component's records. */
function useRecordFeed(
  collection: string,
  records: readonly ServerRecord<unknown>[],
): RecordFeedState | undefined {
  const outbox = useOutbox();
  const feed = useMemo(() => new RecordFeed(outbox, collection), [outbox, collection]);
  // Read when a receipt arrives (what the app had then); assigning it renders nothing.
  feed.records = records;
  return useSyncExternalStore(feed.subscribe, feed.snapshot, noSnapshot);
}

const NO_RECORDS: readonly ServerRecord<never>[] = [];

/**
 * The app's records of `collection` with the outbox's pending edits laid over them, live
 * (`shared/plan/record-overlay.ts`): creates and updates merged by the outbox's own rules,
 * deleted records left out, pending creates listed after the app's, one status per record
 * (`synced`, `pending`, `retrying`, `sending`, `held`, `blocked`, `unknown`). A settled edit's
 * server answer stands in until `serverRecords` has its revision (or, without revisions,
 * changes), so nothing flickers back to an old value. `undefined` until the outbox answered.
 */
export function useRecords<T = Json>(
  collection: string,
  serverRecords: readonly ServerRecord<T>[] | undefined,
  options: RecordOptions = {},
): RecordView<T>[] | undefined {
  const records = serverRecords ?? (NO_RECORDS as readonly ServerRecord<T>[]);
  const state = useRecordFeed(collection, records);
  const { handler } = options;
  return useMemo(
    () =>
      state === undefined
        ? undefined
        : overlayRecords({ records, ...state, ...(handler === undefined ? {} : { handler }) }),
    [state, records, handler],
  );
}

/**
 * One record by either of its names (its server id, or `pending:<id>` before and after it got
 * one), with its pending edits laid over `serverRecord` when given (else over nothing: a pending
 * create's whole value, an edit's fields). Deleted records come with `deleted: true`; a record
 * neither the app nor the outbox has is `undefined`, as is everything until the outbox answered.
 */
export function useRecord<T = Json>(
  collection: string,
  id: string,
  serverRecord?: ServerRecord<T>,
  options: RecordOptions = {},
): RecordView<T> | undefined {
  const records = useMemo(
    () =>
      serverRecord === undefined ? (NO_RECORDS as readonly ServerRecord<T>[]) : [serverRecord],
    [serverRecord],
  );
  const state = useRecordFeed(collection, records);
  const { handler } = options;
  return useMemo(
    () =>
      state === undefined
        ? undefined
        : overlayRecord({ records, ...state, ...(handler === undefined ? {} : { handler }) }, id),
    [state, records, handler, id],
  );
}

export type {
  RecordStatus,
  RecordView,
  ServerRecord,
} from '../shared/plan/record-overlay.ts';
export type { RecordOptions, RowProgress } from './observable.ts';
