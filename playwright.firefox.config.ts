import { defineConfig } from '@playwright/test';

/**
 * The guarantees in Firefox ESR (SPEC §21), driven by puppeteer-core over WebDriver BiDi (Debian's
 * `firefox-esr`; Playwright cannot drive a stock Firefox). Run by `npm test`, or alone with
 * `npx playwright test -c playwright.firefox.config.ts`.
 */
export default defineConfig({
  testDir: 'e2e/browsers',
  testMatch: 'firefox.suite.ts',
  globalSetup: './e2e/support/global-setup.ts',
  workers: 2,
  fullyParallel: true,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  outputDir: 'test-results/firefox',
});
