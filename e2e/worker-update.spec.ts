import type { Page } from '@playwright/test';
import { expect, test } from './support/fixtures.ts';
import type { WorkerEvent } from './support/worker-events.ts';

/** Registers a new worker script for the same scope: an update that activates with skipWaiting. */
function update(page: Page, version: string) {
  return page.evaluate(
    (v) =>
      navigator.serviceWorker
        .register(`/sw.js?version=${v}&lease=3000`, { scope: '/app/', type: 'module' })
        .then(() => undefined),
    version,
  );
}

test('a worker update while the old worker is mid-flush: both flush, no request goes out twice, nothing is lost', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ persist: true, sw: { version: '1', lease: '3000' } });
  const held = requests.hold((entry) => entry.method === 'POST' && entry.from === 'worker');
  const first = await app.createNote('old');
  await held.reached;

  const controllerChanged = app.page.evaluate(
    () =>
      new Promise<void>((resolve) =>
        navigator.serviceWorker.addEventListener('controllerchange', () => resolve(), {
          once: true,
        }),
      ),
  );
  await update(app.page, '2');
  // The new worker flushes on start while the old one is mid-request: it must leave that row alone.
  await expect
    .poll(async () =>
      (await app.events<WorkerEvent>()).some(
        (event) => event.type === 'flushed' && event.version === '2',
      ),
    )
    .toBe(true);
  held.release();
  // Chromium activates the update once the old worker's flush has settled.
  await controllerChanged;

  const second = await app.createNote('new');
  await app.flushUntilEmpty();

  const stats = await server.stats(user);
  expect(stats.effectsByKey).toEqual({ [first]: 1, [second]: 1 });
  expect(requests.keyCounts()).toEqual({ [first]: 1, [second]: 1 });
  const flushedBy = new Set(
    (await app.events<WorkerEvent>())
      .filter((event) => event.type === 'flushed')
      .map((event) => event.version),
  );
  expect([...flushedBy].sort()).toEqual(['1', '2']);
  const sentBy = (await app.events<WorkerEvent>()).filter((event) => event.type === 'sent');
  expect(sentBy.find((event) => event.id === first)?.version).toBe('1');
  expect(sentBy.find((event) => event.id === second)?.version).toBe('2');
});
