import { test as base } from '@playwright/test';
import { serverTest as withServer } from '../support/server-test.ts';
import type { ScenarioContext } from './guarantees.ts';

/**
 * What the Firefox and WebKit suites share: the reference server and a user per test
 * (e2e/support/server-test.ts), and for a failed test the server's view of it.
 */
export const serverTest = withServer.extend<{ diagnostics: undefined }>({
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
