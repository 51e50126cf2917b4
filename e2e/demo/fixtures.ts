import { randomBytes } from 'node:crypto';
import { test as base } from '@playwright/test';
import { perWorker } from '../support/per-worker.ts';
import { DemoPage } from './demo-page.ts';
import { DemoServer } from './demo-server.ts';

/**
 * Fixtures of the demo tests: the demo server as `npm start` runs it, one per Playwright worker;
 * per test a user of its own (the server counts effects per user) and the demo opened in a fresh
 * browser context at a size that fits the editor and the inspector side by side.
 */
export const test = base.extend<{ user: string; demo: DemoPage }, { demoServer: DemoServer }>({
  demoServer: perWorker(
    () => DemoServer.start(),
    (server) => server.stop(),
    { timeout: 120_000 },
  ),
  baseURL: async ({ demoServer }, use) => use(demoServer.url),
  viewport: { width: 1360, height: 900 },
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  user: async ({}, use) => use(`alice-${randomBytes(3).toString('hex')}`),
  demo: async ({ context, baseURL }, use) => use(new DemoPage(context, baseURL!)),
});

export { expect } from '@playwright/test';
