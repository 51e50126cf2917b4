import { connectOutbox, type RowView } from 'sw-outbox/client';

const form = document.querySelector<HTMLFormElement>('#add')!;
const list = document.querySelector<HTMLUListElement>('#changes')!;
const status = document.querySelector<HTMLParagraphElement>('#status')!;

// The demo server's sign-in; a real app has its own. The token is kept so the app also starts
// offline, and handed to the worker, which adds it to each request it sends.
async function signIn(user: string): Promise<string> {
  const saved = localStorage.getItem('token');
  if (saved) return saved;
  const response = await fetch('/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user }),
  });
  const { token } = (await response.json()) as { token: string };
  localStorage.setItem('token', token);
  return token;
}

const user = 'alice';
const token = await signIn(user);

// In `vite dev` the plugin serves the worker as a module at /dev-sw.js?dev-sw; a build emits a
// classic script at /sw.js (rollupFormat: 'iife').
const outbox = await connectOutbox({
  swUrl: import.meta.env.DEV ? '/dev-sw.js?dev-sw' : '/sw.js',
  type: import.meta.env.DEV ? 'module' : 'classic',
  owner: user,
});
// persist: a restarted worker can still send after every tab has closed.
await outbox.setAuth({ authorization: `Bearer ${token}` }, { persist: true });

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const title = new FormData(form).get('title');
  if (typeof title !== 'string' || title === '') return;
  // Cleared before the enqueue is awaited: what is typed meanwhile is the next note.
  form.reset();
  await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title } });
});

outbox.subscribe((rows: RowView[]) => {
  status.textContent =
    rows.length === 0 ? 'All changes are on the server.' : `${rows.length} waiting`;
  list.replaceChildren(
    ...rows.map((view) => {
      const item = document.createElement('li');
      item.textContent = `${view.status}: ${JSON.stringify(view.row.payload ?? null)}`;
      return item;
    }),
  );
});
