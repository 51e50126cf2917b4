import type { AppPage } from './app-page.ts';
import { expect } from './fixtures.ts';
import type { ReferenceServer } from './server.ts';

/**
 * Enqueues a create that the server turns away once with a Retry-After (by default an hour: a
 * row that only a forced flush — push, periodic sync, a page — sends again) and waits until it
 * is `deferred`.
 */
export async function deferredCreate(
  app: AppPage,
  server: ReferenceServer,
  user: string,
  title: string,
  retryAfter = 3600,
): Promise<string> {
  await server.fault({
    kind: 'unavailable',
    route: 'POST /api/notes',
    user,
    count: 1,
    retryAfter,
  });
  const id = await app.createNote(title);
  await expect
    .poll(async () => (await app.value<{ status: string } | undefined>('row', id))?.status)
    .toBe('deferred');
  return id;
}
