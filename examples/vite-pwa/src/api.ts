import type { Receipt } from 'sw-outbox/client';

// The app's reads: its own fetches of the todo API (examples/hono-sqlite). Writes never go from
// here: the page enqueues them and the worker sends them (src/sw.ts).

/**
 * The API's demo sign-in: `Authorization: Bearer <user>` names the user. A real app has its own
 * (see docs/auth.md); the outbox only needs the headers to send with.
 */
export const USER = 'alice';
export const AUTHORIZATION = `Bearer ${USER}`;

/** A todo as `GET /api/todos` lists it. */
export interface Todo {
  id: string;
  revision: number;
  title: string;
  done: boolean;
}

/** What the list shows of a todo: the fields an edit changes. */
export type TodoValue = Pick<Todo, 'title' | 'done'>;

const CACHE = 'todos';

/** The list as last fetched, and when that fetch started (this device's clock). */
export interface CachedTodos {
  todos: Todo[];
  at: number;
}

/** The user's todos from the server; throws when it cannot answer (offline, an error). */
export async function fetchTodos(): Promise<Todo[]> {
  const at = Date.now();
  const response = await fetch('/api/todos', { headers: { authorization: AUTHORIZATION } });
  if (!response.ok) throw new Error(`GET /api/todos answered ${response.status}`);
  const todos = (await response.json()) as Todo[];
  // Kept so that the app also opens offline with the last list it saw.
  localStorage.setItem(CACHE, JSON.stringify({ todos, at } satisfies CachedTodos));
  return todos;
}

/** The last list fetched, if any. */
export function cachedTodos(): CachedTodos | undefined {
  const saved = localStorage.getItem(CACHE);
  if (saved === null) return undefined;
  const parsed = JSON.parse(saved) as CachedTodos | Todo[];
  // A list an earlier version of the app kept: when is unknown, so every receipt counts.
  return Array.isArray(parsed) ? { todos: parsed, at: 0 } : parsed;
}

/**
 * The last list fetched, with what the outbox applied since laid over it: each receipt is the
 * server's own answer to a change (a create or update answers with the todo, a delete with
 * nothing). The worker also sends with no page open, so a change it applied then is in no list
 * this page fetched: without this, opening the app offline would not show it. A todo takes an
 * answer only at a newer revision than the one the list has, so an older receipt never undoes a
 * newer list.
 */
export function withApplied({ todos, at }: CachedTodos, receipts: readonly Receipt[]): Todo[] {
  const byId = new Map(todos.map((todo) => [todo.id, todo]));
  const since = receipts
    .filter((r) => r.collection === 'todos' && r.settledAt >= at && r.status < 300)
    .sort((a, b) => a.settledAt - b.settledAt);
  for (const receipt of since) {
    if (receipt.kind === 'delete') {
      byId.delete(receipt.serverId ?? receipt.targetId);
      continue;
    }
    const todo = receipt.body as Partial<Todo> | null;
    if (typeof todo?.id !== 'string' || typeof todo.revision !== 'number') continue;
    const known = byId.get(todo.id);
    if (known === undefined || known.revision < todo.revision) byId.set(todo.id, todo as Todo);
  }
  return [...byId.values()];
}
