import { useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { useOutbox, usePendingCount } from 'sw-outbox/react';
import { cachedTodos, fetchTodos, type Todo, withApplied } from './api.ts';

/**
 * The server's list as the app last fetched it: on start, when the browser comes back online,
 * and each time the outbox's queue of todos shrinks (a change reached the server). Until the
 * refetch lands, `useRecords` shows the server's answer to that change, so the list never shows
 * the old value in between. Offline, the list last fetched with the changes the outbox applied
 * since (its receipts), whether or not a page was open then.
 */
export function useServerTodos(): Todo[] | undefined {
  const outbox = useOutbox();
  const [todos, setTodos] = useState<Todo[] | undefined>(undefined);
  const online = useOnline();
  const pending = usePendingCount({ collection: 'todos' });
  // One more each time the queue shrinks: a change reached the server (or was discarded).
  const [changes, setChanges] = useState(0);
  const last = useRef(pending);
  useEffect(() => {
    if (pending !== undefined && last.current !== undefined && pending < last.current)
      setChanges((n) => n + 1);
    last.current = pending;
  }, [pending]);

  const asked = useRef(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `changes` is the refetch's trigger.
  useEffect(() => {
    // Only the newest answer counts: an older one that lands late would undo a newer.
    const n = ++asked.current;
    // Offline or failing: keep what the list shows, or show the last list fetched.
    const fallBack = () => {
      const cached = cachedTodos();
      if (cached === undefined) return;
      outbox.receipts().then(
        (receipts) => {
          if (n === asked.current) setTodos((shown) => shown ?? withApplied(cached, receipts));
        },
        () => setTodos((shown) => shown ?? cached.todos),
      );
    };
    if (!online) {
      fallBack();
      return;
    }
    fetchTodos().then((fresh) => {
      if (n === asked.current) setTodos(fresh);
    }, fallBack);
  }, [online, changes]);
  return todos;
}

function subscribeOnline(onChange: () => void): () => void {
  window.addEventListener('online', onChange);
  window.addEventListener('offline', onChange);
  return () => {
    window.removeEventListener('online', onChange);
    window.removeEventListener('offline', onChange);
  };
}

/** Whether the browser thinks it is online (`navigator.onLine`), live. */
export function useOnline(): boolean {
  return useSyncExternalStore(subscribeOnline, () => navigator.onLine);
}
