import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './e2e/support/chromium.ts';

/**
 * A measurement, not a test (SPEC §21, the README's browser table): what sends an edit in
 * Chromium after a server outage with every tab closed and the worker stopped — the browser's
 * Background Sync retries, or the next visit. It waits for the browser's own retry schedule
 * (minutes), so `npm test` never runs it: `npm run measure:outage`. Each scenario runs in its own
 * Playwright worker, all at once; the whole run takes about 25 minutes of wall time and little
 * CPU.
 */
export default defineConfig({
  testDir: 'e2e/outage',
  testMatch: '*.measure.ts',
  globalSetup: './e2e/support/global-setup.ts',
  workers: 8,
  fullyParallel: true,
  retries: 0,
  timeout: 40 * 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  outputDir: 'test-results/outage',
  use: {
    headless: true,
    trace: 'off',
    launchOptions: {
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
    },
  },
});
