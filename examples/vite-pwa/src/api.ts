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

/** The user's todos from the server; throws when it cannot answer (offline, an error). */
export async function fetchTodos(): Promise<Todo[]> {
  const response = await fetch('/api/todos', { headers: { authorization: AUTHORIZATION } });
  if (!response.ok) throw new Error(`GET /api/todos answered ${response.status}`);
  const todos = (await response.json()) as Todo[];
  // Kept so that the app also opens offline with the last list it saw.
  localStorage.setItem(CACHE, JSON.stringify(todos));
  return todos;
}

/** The last list fetched, if any. */
export function cachedTodos(): Todo[] | undefined {
  const saved = localStorage.getItem(CACHE);
  return saved === null ? undefined : (JSON.parse(saved) as Todo[]);
}
