import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer-core';
import type { Evaluate, OpenParams } from '../support/outbox-tab.ts';
import { BrowserTab, type Profile } from './profile.ts';

/**
 * Firefox ESR (Debian's `firefox-esr`) driven by puppeteer-core over WebDriver BiDi, which is how
 * it can be automated without a patched build (TOOLING). A profile is a browser context: it
 * isolates workers and IndexedDB.
 */

/** Debian's Firefox ESR, or `FIREFOX_PATH`. */
export const FIREFOX_PATH = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';

/**
 * Prefs under which Firefox stops an idle worker within seconds: after 2 s without an event, and
 * 2 s after that for work under `waitUntil` (defaults 30 s and 30 s). What an idle stop does to
 * a page, without waiting half a minute for it.
 */
export const SHORT_IDLE_PREFS = {
  'dom.serviceWorkers.idle_timeout': 2000,
  'dom.serviceWorkers.idle_extended_timeout': 2000,
};

/** Starts a headless Firefox with `prefs` on top of puppeteer's defaults. */
export function launchFirefox(prefs: Record<string, unknown> = {}): Promise<Browser> {
  return puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX_PATH,
    headless: true,
    extraPrefsFirefox: prefs,
  });
}

class FirefoxTab extends BrowserTab {
  constructor(readonly page: Page) {
    super(page.evaluate.bind(page) as unknown as Evaluate);
  }

  async close(): Promise<void> {
    await this.page.close();
  }
}

/** A browser context of a running Firefox: its own workers, IndexedDB and cookies. */
export class FirefoxProfile implements Profile {
  readonly browser = 'firefox';

  private constructor(
    private readonly context: BrowserContext,
    private readonly baseURL: string,
  ) {}

  static async create(browser: Browser, baseURL: string): Promise<FirefoxProfile> {
    return new FirefoxProfile(await browser.createBrowserContext(), baseURL);
  }

  async open(params: OpenParams): Promise<BrowserTab> {
    const page = await this.context.newPage();
    await page.goto(`${this.baseURL}${params.path ?? '/app/'}`);
    const tab = new FirefoxTab(page);
    await tab.start(params);
    return tab;
  }

  async close(): Promise<void> {
    await this.context.close().catch(() => undefined);
  }
}
