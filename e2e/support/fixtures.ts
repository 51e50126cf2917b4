import { randomBytes } from 'node:crypto';
import { type BrowserContext, test as base } from '@playwright/test';
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
  context: async ({ context }, use) => {
    await use(context);
    await settleBackgroundSync(context);
  },
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  user: async ({}, use) => use(`u-${randomBytes(6).toString('hex')}`),
  requests: async ({ context }, use) => use(await RequestLog.attach(context)),
});

/**
 * Waits (briefly) for pending Background Sync registrations to fire. Chromium's shutdown hangs
 * for 30 s when the browser closes while a sync is being dispatched to a just-updated worker, so
 * each test lets the syncs it caused finish first.
 */
async function settleBackgroundSync(context: BrowserContext): Promise<void> {
  const page = context.pages().find((p) => p.url().startsWith('http'));
  if (page === undefined) return;
  await page
    .evaluate(async () => {
      for (let i = 0; i < 50; i++) {
        const registrations = await navigator.serviceWorker.getRegistrations();
        const tags = await Promise.all(
          registrations.map((r) => r.sync?.getTags() ?? Promise.resolve([])),
        );
        if (tags.every((list) => list.length === 0)) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })
    .catch(() => undefined);
}

export { expect } from '@playwright/test';
