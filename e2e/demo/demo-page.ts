import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, expect, type Locator, type Page } from '@playwright/test';

/** Where the tests write their screenshots; `docs/` keeps the chosen ones. */
export const SCREENSHOTS = join('docs', 'screenshots', 'tmp');

/**
 * The demo driven the way a person uses it: through its form, buttons and dialog only. Nothing
 * here calls the outbox API or the server directly.
 */
export class DemoPage {
  #page: Page | undefined;

  constructor(
    readonly context: BrowserContext,
    readonly baseURL: string,
  ) {}

  get page(): Page {
    if (this.#page === undefined) throw new Error('the demo is not open');
    return this.#page;
  }

  /** Opens the demo in a new tab and waits until its worker answers (or the sign-in shows). */
  async open(): Promise<void> {
    this.#page = await this.context.newPage();
    await this.page.goto(this.baseURL);
    await expect(this.page.locator('#signin:not([hidden]), #holder code').first()).toBeVisible();
  }

  async close(): Promise<void> {
    await this.#page?.close();
    this.#page = undefined;
  }

  /** Opens the demo and signs in as `user`. */
  async openAs(user: string): Promise<void> {
    await this.open();
    await this.signIn(user);
  }

  async signIn(user: string): Promise<void> {
    await this.page.getByLabel('User').fill(user);
    await this.page.getByRole('button', { name: 'Sign in' }).click();
    await expect(this.page.locator(`[data-user="${user}"]`)).toBeVisible();
    await expect(this.page.locator('#holder code')).toBeVisible();
  }

  /** One of the inspector's controls (`offline`, `online`, `drop`, `flush`, …). */
  async control(name: string): Promise<void> {
    await this.page.locator(`[data-control="${name}"]`).click();
  }

  async addNote(title: string, body = ''): Promise<void> {
    const form = this.page.locator('#new-note');
    await form.getByLabel('Title').fill(title);
    await form.getByLabel('Note').fill(body);
    await form.getByRole('button', { name: 'Add note' }).click();
    await expect(this.card(title)).toBeVisible();
  }

  /** The card whose title is `title`. */
  card(title: string): Locator {
    return this.page.locator(`#cards li.card[data-title="${title}"]`);
  }

  async editNote(title: string, changes: { title?: string; body?: string }): Promise<void> {
    await this.card(title).getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = this.page.locator('#edit-dialog');
    if (changes.title !== undefined) await dialog.getByLabel('Title').fill(changes.title);
    if (changes.body !== undefined) await dialog.getByLabel('Note').fill(changes.body);
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(this.card(changes.title ?? title)).toBeVisible();
  }

  async deleteNote(title: string): Promise<void> {
    await this.card(title).getByRole('button', { name: 'Delete' }).click();
    await expect(this.card(title)).toHaveClass(/deleting/);
  }

  /**
   * A revision conflict provoked the way a person would (SPEC §10): the note "Trip plan" is
   * added and synced, edited offline here from revision 1 ("Lisbon in June"), moved to revision 2
   * by "another device", and then the network is back.
   */
  async editOverAnotherDevice(): Promise<void> {
    await this.addNote('Trip plan', 'Lisbon in May');
    await expect(this.card('Trip plan').locator('.badge')).toHaveText(['synced']);
    await this.control('offline');
    await this.editNote('Trip plan', { body: 'Lisbon in June' });
    await expect(this.card('Trip plan').locator('.badge')).toHaveText('deferred');
    await this.card('Trip plan').getByRole('button', { name: 'Edit on another device' }).click();
    await expect(this.page.locator('#notices')).toContainText('server revision 2');
    await this.control('online');
  }

  /** A part of the outbox inspector (`<outbox-inspector>`): `rows`, `receipts` or `conflicts`. */
  inspector(part: 'rows' | 'receipts' | 'conflicts'): Locator {
    return this.page.locator(`#outbox [data-section="${part}"]`);
  }

  /** A number in the "Exactly once" panel (`effects`, `receipts`, `edits-made`, …). */
  figure(name: string): Locator {
    return this.page.locator(`[data-figure="${name}"] .value`);
  }

  async screenshot(section: 'editor' | 'inspector', name: string): Promise<string> {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const path = join(SCREENSHOTS, `${name}.png`);
    // Toasts come and go; they are not part of the picture.
    await this.page.locator('#notices').evaluate((list) => list.replaceChildren());
    await this.page.locator(`#${section}`).screenshot({ path, animations: 'disabled' });
    return path;
  }
}
