import type { BrowserContext } from '@playwright/test';
import { AppPage } from './app-page.ts';
import type { OpenParams } from './outbox-tab.ts';
import { RequestLog } from './requests.ts';
import { serverTest } from './server-test.ts';

/**
 * How a test opens the test page as its user (the owner, signed in): `persist` hands the token
 * to the worker for good, so it can send with no page open (SPEC §13); `baseURL` opens it on
 * another server than the shared one.
 */
export type AppOptions = Omit<OpenParams, 'owner' | 'login'> & {
  persist?: boolean;
  baseURL?: string;
};

/**
 * Fixtures: the reference server and a unique user (e2e/support/server-test.ts), and per test a
 * fresh browser context with a request log, `baseURL` pointing at the server and `openApp`,
 * which opens the test page in that context as the test's user.
 */
export const test = serverTest.extend<{
  requests: RequestLog;
  openApp: (options?: AppOptions) => Promise<AppPage>;
}>({
  baseURL: async ({ server }, use) => use(server.url),
  context: async ({ context }, use) => {
    await use(context);
    await settleBackgroundSync(context);
  },
  requests: async ({ context }, use) => use(await RequestLog.attach(context)),
  openApp: async ({ context, baseURL, user }, use) =>
    use(({ persist = false, baseURL: at = baseURL!, ...params } = {}) =>
      AppPage.open(context, at, { owner: user, login: { user, persist }, ...params }),
    ),
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
