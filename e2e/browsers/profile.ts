import { expect } from '@playwright/test';
import { type OpenParams, OutboxTab } from '../support/outbox-tab.ts';

/**
 * What the Firefox and WebKit suites need from a browser (SPEC §21): isolated profiles with tabs
 * that run the e2e page. Neither browser offers what the Chromium suite leans on — request
 * interception, a worker target, network emulation that reaches the worker, a way to stop a
 * worker — so the scenarios count effects at the server and make faults there.
 */

/** A tab running the e2e page (e2e/app/page.ts). */
export abstract class BrowserTab extends OutboxTab {
  /** Leaves the page: the tab closes, so it is no longer one of the worker's clients. */
  abstract close(): Promise<void>;

  /**
   * Reloads the page and connects again. `hard` is Ctrl+Shift+R (`location.reload(true)`): the
   * new document bypasses the worker and stays uncontrolled until the next navigation.
   */
  async reload(params: OpenParams, options: { hard: boolean }): Promise<void> {
    await this.evaluate((hard) => {
      (globalThis as unknown as { __leaving: boolean }).__leaving = true;
      // Firefox still honours the old forceGet argument; the others ignore it.
      setTimeout(() => (location.reload as (forceGet?: boolean) => void)(hard), 0);
    }, options.hard);
    await expect
      .poll(() =>
        this.evaluate(
          () => !('__leaving' in globalThis) && document.readyState === 'complete',
          undefined,
        ).catch(() => false),
      )
      .toBe(true);
    await this.start(params);
  }
}

/** One isolated browser profile: its own workers, IndexedDB and cookies. */
export interface Profile {
  readonly browser: 'firefox' | 'webkit';
  /** Opens a tab at `params.path` (default `/app/`) and connects it. */
  open(params: OpenParams): Promise<BrowserTab>;
  close(): Promise<void>;
}
