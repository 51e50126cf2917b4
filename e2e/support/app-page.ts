import type { BrowserContext, Page } from '@playwright/test';
import { WorkerControl } from './cdp.ts';
import { type Evaluate, type OpenParams, OutboxTab } from './outbox-tab.ts';

export type { CallResult, ConnectParams } from './outbox-tab.ts';

/** A test page (e2e/app/page.ts) in Playwright's Chromium; see {@link OutboxTab}. */
export class AppPage extends OutboxTab {
  constructor(readonly page: Page) {
    // Playwright's overloads cannot take a generic argument type; the runtime call is the same.
    const evaluate = page.evaluate.bind(page) as unknown as Evaluate;
    super(evaluate);
  }

  /** Opens `path` (`/app/` is in the worker's scope, `/outside/` is not) and connects. */
  static async open(
    context: BrowserContext,
    baseURL: string,
    params: OpenParams,
  ): Promise<AppPage> {
    const page = await context.newPage();
    await page.goto(`${baseURL}${params.path ?? '/app/'}`);
    const app = new AppPage(page);
    await app.start(params);
    return app;
  }

  /** Takes hold of the page origin's service workers through the DevTools protocol. */
  controlWorkers(): Promise<WorkerControl> {
    return WorkerControl.attach(this.page, new URL(this.page.url()).origin);
  }
}
