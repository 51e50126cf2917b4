import { type FormEvent, lazy, Suspense, useState } from 'react';
import {
  type RecordStatus,
  type RecordView,
  useHealth,
  useOutbox,
  useRecords,
} from 'sw-outbox/react';
import type { TodoValue } from './api.ts';
import { useOnline, useServerTodos } from './hooks.ts';

// The outbox inspector, for development: `?inspector` in the URL, or VITE_INSPECTOR=1 at build.
// Loaded on demand, so the app's own bundle does not carry it.
const Inspector = lazy(() => import('./Inspector.tsx'));
const SHOW_INSPECTOR =
  new URLSearchParams(location.search).has('inspector') || import.meta.env.VITE_INSPECTOR === '1';

/** What a user reads for each record status (docs/statuses.md). */
const LABEL: Record<RecordStatus, string> = {
  synced: 'Saved',
  pending: 'Waiting to sync',
  retrying: 'Offline — will retry',
  sending: 'Saving…',
  unknown: 'Saving in another version of the app',
  held: 'Waiting for you to sign in',
  blocked: 'Not saved — needs your attention',
};

export function App() {
  const outbox = useOutbox();
  // The server's list with the outbox's pending edits laid over it: one value and one status
  // per todo, pending creates last, deleted todos left out.
  const serverTodos = useServerTodos();
  const todos = useRecords<TodoValue>(
    'todos',
    serverTodos?.map(({ id, revision, title, done }) => ({ id, revision, value: { title, done } })),
  );

  async function add(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const title = new FormData(form).get('title');
    if (typeof title !== 'string' || title.trim() === '') return;
    // Cleared before the enqueue is awaited: what is typed meanwhile is the next todo.
    form.reset();
    await outbox.enqueue({ collection: 'todos', kind: 'create', payload: { title, done: false } });
  }

  return (
    <main>
      <h1>Todos</h1>
      <Banner />
      <form onSubmit={add}>
        <input name="title" placeholder="What needs doing?" aria-label="New todo" />
        <button type="submit">Add</button>
      </form>
      {todos === undefined ? (
        <p>Loading…</p>
      ) : (
        <ul aria-label="Todos">
          {todos.map((todo) => (
            <Item key={todo.key} todo={todo} />
          ))}
        </ul>
      )}
      {SHOW_INSPECTOR && (
        <Suspense fallback={null}>
          <Inspector />
        </Suspense>
      )}
    </main>
  );
}

/** Offline, or a queue only the user can unstick: said at the top, once. */
function Banner() {
  const online = useOnline();
  const health = useHealth();
  if (!online) {
    return (
      <p role="alert" className="banner">
        You are offline. Changes are kept on this device and sent when you are back online, even if
        you close this tab.
      </p>
    );
  }
  if (health?.stalled === 'blocked' || health?.stalled === 'held') {
    return (
      <p role="alert" className="banner">
        {health.stalled === 'held' ? LABEL.held : 'Some changes were not saved: see below.'}
      </p>
    );
  }
  return null;
}

/** One todo: its value with pending edits laid over it, and its record status. */
function Item({ todo }: { todo: RecordView<TodoValue> }) {
  const outbox = useOutbox();
  const [editing, setEditing] = useState(false);
  const value = todo.value;
  if (value === undefined) return null;
  // An edit names the todo as it is named now (`pending:…` until its create is applied) and,
  // once it has a server id, the revision it was made from (the API checks it with If-Match).
  const edit = (kind: 'update' | 'delete', payload?: Partial<TodoValue>) =>
    outbox.enqueue({
      collection: 'todos',
      kind,
      targetId: todo.id,
      ...(todo.revision == null ? {} : { baseRevision: todo.revision }),
      ...(payload === undefined ? {} : { payload }),
    });

  function rename(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const title = new FormData(event.currentTarget).get('title');
    setEditing(false);
    if (typeof title === 'string' && title.trim() !== '' && title !== value?.title)
      void edit('update', { title });
  }

  const row = todo.decidedBy?.row.id;
  return (
    <li data-key={todo.key} data-status={todo.status} data-done={value.done}>
      <input
        type="checkbox"
        checked={value.done}
        aria-label={`Done: ${value.title}`}
        onChange={(event) => void edit('update', { done: event.currentTarget.checked })}
      />
      {editing ? (
        <form onSubmit={rename}>
          <input name="title" defaultValue={value.title} aria-label="Title" />
          <button type="submit">Save</button>
        </form>
      ) : (
        <span className="title">{value.title}</span>
      )}
      <small className={`status ${todo.status}`}>{LABEL[todo.status]}</small>
      {!editing && (
        <button type="button" onClick={() => setEditing(true)} aria-label={`Edit ${value.title}`}>
          Edit
        </button>
      )}
      <button
        type="button"
        onClick={() => void edit('delete')}
        aria-label={`Delete ${value.title}`}
      >
        Delete
      </button>
      {todo.status === 'blocked' && row !== undefined && (
        <>
          <button type="button" onClick={() => void outbox.retry(row)}>
            Retry
          </button>
          <button type="button" onClick={() => void outbox.discard(row)}>
            Discard
          </button>
        </>
      )}
    </li>
  );
}
