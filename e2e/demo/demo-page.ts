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
