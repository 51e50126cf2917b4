import { randomBytes } from 'node:crypto';
import { test as base } from '@playwright/test';
import { ReferenceServer } from '../support/server.ts';
import type { ScenarioContext } from './guarantees.ts';

/**
 * What the Firefox and WebKit suites share: one reference server per Playwright worker (SQLite in
 * a temp dir, admin routes on, the e2e bundles as static files) and a user per test (the server
 * counts effects and logs requests per user, so tests sharing it never see each other's).
 */
export const serverTest = base.extend<
  { user: string; diagnostics: undefined },
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
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  user: async ({}, use) => use(`u-${randomBytes(6).toString('hex')}`),
  // A failed test gets the server's view of it: every request of its user, in order.
  diagnostics: [
    async ({ server, user }, use, testInfo) => {
      await use(undefined);
      if (testInfo.status === testInfo.expectedStatus) return;
      const requests = await server.requests(user).catch(() => []);
      await testInfo.attach('server requests', {
        body: JSON.stringify(requests, null, 2),
        contentType: 'application/json',
      });
    },
    { auto: true },
  ],
});

/** Records a measured fact (shown in the report and the JSON results) for this test. */
export function note(type: string, description: string): void {
  base.info().annotations.push({ type, description });
}

export type { ScenarioContext };
