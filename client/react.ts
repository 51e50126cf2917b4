import {
  createContext,
  createElement,
  type ReactNode,
  useCallback,
  useContext,
  useMemo,
  useSyncExternalStore,
} from 'react';
import type { RowFilter, RowView } from '../shared/model/page-api.ts';
import type { OutboxClient } from './connect.ts';
import {
  type OutboxObservable,
  observeRowProgress,
  observeRows,
  type RowProgress,
} from './observable.ts';

/**
 * `sw-outbox/react`: React hooks over the page API's live views (SPEC §22), with React as an
 * optional peer dependency. Each hook is `useSyncExternalStore` over one of the observables of
 * `observable.ts`, so what it shows is the outbox's own live view (worker restarts included,
 * §13.1) and a render never sees a torn value.
 *
 * ```tsx
 * const outbox = await connectOutbox({ swUrl: '/sw.js', owner });
 * root.render(<OutboxProvider outbox={outbox}><App /></OutboxProvider>);
 * // in a component:
 * const pending = usePendingCount();
 * const notes = useRows({ collection: 'notes' });
 * ```
 */

const OutboxContext = createContext<OutboxClient | undefined>(undefined);

/** Props of {@link OutboxProvider}. */
export interface OutboxProviderProps {
  /** A connected outbox, from `connectOutbox`. */
  outbox: OutboxClient;
  children?: ReactNode;
}

/** Makes an outbox available to the hooks below it. */
export function OutboxProvider({ outbox, children }: OutboxProviderProps): ReactNode {
  return createElement(OutboxContext.Provider, { value: outbox }, children);
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

export type { RowProgress } from './observable.ts';
