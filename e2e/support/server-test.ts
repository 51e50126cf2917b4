import { randomBytes } from 'node:crypto';
import { test as base } from '@playwright/test';
import { perWorker } from './per-worker.ts';
import { ReferenceServer } from './server.ts';

/**
 * What every suite against the reference server shares (Chromium's, Firefox's, WebKit's): one
 * server per Playwright worker (SQLite in a temp dir, admin routes on, the e2e bundles as static
 * files) and a user per test (the server counts effects and logs requests per user, so tests
 * sharing it never see each other's).
 */
export const serverTest = base.extend<{ user: string }, { server: ReferenceServer }>({
  server: perWorker(
    () => ReferenceServer.start(),
    (server) => server.stop(),
  ),
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  user: async ({}, use) => use(`u-${randomBytes(6).toString('hex')}`),
});
