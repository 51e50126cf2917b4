import {
  type Browser,
  type BrowserContext,
  type CDPSession,
  expect,
  type Page,
} from '@playwright/test';

/**
 * Forcing service-worker events through the DevTools protocol (TOOLING "Forcing worker events"):
 * sync, periodic sync and push dispatches, stopping workers, and the periodic-sync permission
 * that Playwright's `grantPermissions` does not know. Every dispatch returns at once; tests poll
 * for the effect.
 */

interface Registration {
  registrationId: string;
  scopeURL: string;
  isDeleted: boolean;
}

interface Version {
  versionId: string;
  registrationId: string;
  scriptURL: string;
  runningStatus: string;
  status: string;
}

export class WorkerControl {
  readonly #registrations = new Map<string, Registration>();
  readonly #versions = new Map<string, Version>();

  private constructor(
    private readonly cdp: CDPSession,
    readonly origin: string,
  ) {
    cdp.on(
      'ServiceWorker.workerRegistrationUpdated',
      (event: { registrations: Registration[] }) => {
        for (const registration of event.registrations)
          this.#registrations.set(registration.registrationId, registration);
      },
    );
    cdp.on('ServiceWorker.workerVersionUpdated', (event: { versions: Version[] }) => {
      for (const version of event.versions) this.#versions.set(version.versionId, version);
    });
  }

  static async attach(page: Page, origin: string): Promise<WorkerControl> {
    const cdp = await page.context().newCDPSession(page);
    const control = new WorkerControl(cdp, origin);
    await cdp.send('ServiceWorker.enable');
    return control;
  }

  /** The live registration whose scope ends with `scopePath`, waiting for it to appear. */
  async registrationId(scopePath = '/app/'): Promise<string> {
    for (let i = 0; i < 100; i++) {
      for (const registration of this.#registrations.values()) {
        if (!registration.isDeleted && registration.scopeURL.endsWith(scopePath))
          return registration.registrationId;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no service-worker registration for ${scopePath}`);
  }

  /** Versions the browser reports as running (one per live worker instance). */
  running(): Version[] {
    return [...this.#versions.values()].filter((version) => version.runningStatus === 'running');
  }

  async sync(options: { tag?: string; lastChance?: boolean; scope?: string } = {}): Promise<void> {
    await this.cdp.send('ServiceWorker.dispatchSyncEvent', {
      origin: this.origin,
      registrationId: await this.registrationId(options.scope),
      tag: options.tag ?? 'sw-outbox',
      lastChance: options.lastChance ?? false,
    });
  }

  async periodicSync(tag = 'sw-outbox-periodic'): Promise<void> {
    await this.cdp.send('ServiceWorker.dispatchPeriodicSyncEvent', {
      origin: this.origin,
      registrationId: await this.registrationId(),
      tag,
    });
  }

  async push(data: string): Promise<void> {
    await this.cdp.send('ServiceWorker.deliverPushMessage', {
      origin: this.origin,
      registrationId: await this.registrationId(),
      data,
    });
  }

  /** Stops every worker at once: in-flight fetches die, the next event starts a new instance. */
  async stopAll(): Promise<void> {
    await this.cdp.send('ServiceWorker.stopAllWorkers');
  }

  /** Stops every worker and waits until the browser reports none running. */
  async stopAllAndWait(): Promise<void> {
    await this.stopAll();
    await expect.poll(() => this.running().length).toBe(0);
  }

  async detach(): Promise<void> {
    await this.cdp.detach().catch(() => undefined);
  }
}

/**
 * Grants periodic and one-off Background Sync for the context's origin (Playwright's
 * `grantPermissions` does not know them). The grant lives as long as the DevTools session that
 * made it — detaching resets it — so the session is returned and kept open for the test.
 */
export async function grantBackgroundSync(
  browser: Browser,
  context: BrowserContext,
  page: Page,
  origin: string,
): Promise<CDPSession> {
  const cdp = await context.newCDPSession(page);
  const { targetInfo } = (await cdp.send('Target.getTargetInfo')) as {
    targetInfo: { browserContextId: string };
  };
  await cdp.detach();
  const browserCdp = await browser.newBrowserCDPSession();
  // The grant replaces all others, so both kinds are named.
  await browserCdp.send('Browser.grantPermissions', {
    origin,
    browserContextId: targetInfo.browserContextId,
    permissions: ['periodicBackgroundSync', 'backgroundSync'],
  });
  return browserCdp;
}
