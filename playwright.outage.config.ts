import { defineConfig } from '@playwright/test';
import base from './playwright.config.ts';

/**
 * A measurement, not a test (SPEC §21, the README's browser table): what sends an edit in
 * Chromium after a server outage with every tab closed and the worker stopped — the browser's
 * Background Sync retries, or the next visit. It waits for the browser's own retry schedule
 * (minutes), so `npm test` never runs it: `npm run measure:outage`. Each scenario runs in its own
 * Playwright worker, all at once; the whole run takes about 25 minutes of wall time and little
 * CPU. The browser and its set-up are the end-to-end suite's.
 */
export default defineConfig({
  ...base,
  testDir: 'e2e/outage',
  testMatch: '*.measure.ts',
  workers: 8,
  timeout: 40 * 60_000,
  outputDir: 'test-results/outage',
});
