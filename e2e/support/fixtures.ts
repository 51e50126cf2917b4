import { randomBytes } from 'node:crypto';
import { test as base } from '@playwright/test';
import { RequestLog } from './requests.ts';
import { ReferenceServer } from './server.ts';

/**
 * Fixtures: one reference server per Playwright worker (SQLite in a temp dir, admin on, serving
 * the e2e bundles), and per test a fresh browser context with a request log, a unique user (the
 * server counts effects per user, so tests sharing a server never see each other's writes) and
 * `baseURL` pointing at the server.
 */
export const test = base.extend<
  { user: string; requests: RequestLog },
  { server: ReferenceServer }
>({
  server: [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
    async ({}, use) => {
      const server = await ReferenceServer.start();
      await use(server);
      await server.stop();
    },
    { scope: 'worker' },
  ],
  baseURL: async ({ server }, use) => use(server.url),
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  user: async ({}, use) => use(`u-${randomBytes(6).toString('hex')}`),
  requests: async ({ context }, use) => use(await RequestLog.attach(context)),
});

export { expect } from '@playwright/test';
