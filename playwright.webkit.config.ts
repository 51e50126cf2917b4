import { defineConfig } from '@playwright/test';

/**
 * The guarantees in WebKitGTK (SPEC §21), driven over classic WebDriver (Debian's
 * `webkit2gtk-driver`, MiniBrowser on an Xvfb display). Run by `npm test`, or alone with
 * `npx playwright test -c playwright.webkit.config.ts`.
 */
export default defineConfig({
  testDir: 'e2e/browsers',
  testMatch: 'webkit.suite.ts',
  globalSetup: './e2e/support/global-setup.ts',
  workers: 2,
  fullyParallel: true,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  outputDir: 'test-results/webkit',
});
