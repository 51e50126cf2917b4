import type { WorkerFixture } from '@playwright/test';

/**
 * A worker-scoped fixture (a server, a browser, a display): `start` makes one per Playwright
 * worker before its first test needs it, `stop` ends it after the worker's last test.
 */
export function perWorker<T>(
  start: () => Promise<T>,
  stop: (resource: T) => Promise<unknown>,
  options: { timeout?: number } = {},
): [WorkerFixture<T, object>, { scope: 'worker'; timeout?: number }] {
  return [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
    async ({}, use) => {
      const resource = await start();
      await use(resource);
      await stop(resource);
    },
    { scope: 'worker', ...options },
  ];
}
