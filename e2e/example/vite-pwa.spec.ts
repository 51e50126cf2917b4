import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test as base, expect, type Page } from '@playwright/test';
import { EXAMPLE, ExampleApp, ROOT, TodoApi } from './example-apps.ts';

/**
 * examples/vite-pwa as its user runs it (SPEC §22): the React todo PWA built from the packed
 * tarball (scripts/example.mjs prepares it in .tmp/examples/vite-pwa; `npm test` runs that
 * first), sending to examples/hono-sqlite's todo API — in `vite dev`, where vite-plugin-pwa
 * serves the worker as a module, and in its build served by `vite preview`.
 */

type Mode = 'dev' | 'build';
const test = base.extend<{ api: TodoApi }>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  api: async ({}, use) => {
    const api = await TodoApi.start();
    await use(api);
    await api.stop();
  },
});

test.skip(
  !existsSync(join(EXAMPLE, 'dist', 'sw.js')) ||
    !existsSync(join(ROOT, 'server', 'dist', 'kit.js')),
  'the example or the server kit is not built: run `npm run build && node scripts/example.mjs` (npm test does)',
);

/** One rendered value of a todo: its list key, title and done. */
type Seen = { key: string; title: string; done: string };

/**
 * Records every value each todo of the list shows, at every DOM change and every frame, so a
 * value that comes back after a newer one (a settled edit flickering back) cannot pass unseen.
 */
function recordRenders(): void {
  const seen: Seen[] = [];
  const last = new Map<string, string>();
  (window as unknown as { __seen: Seen[] }).__seen = seen;
  const look = () => {
    for (const item of document.querySelectorAll<HTMLElement>('li[data-key]')) {
      const title = item.querySelector('.title')?.textContent;
      if (title === undefined || title === null) continue; // being edited
      const value = { key: item.dataset.key!, title, done: item.dataset.done ?? '' };
      const text = `${value.title}|${value.done}`;
      if (last.get(value.key) !== text) {
        last.set(value.key, text);
        seen.push(value);
      }
    }
  };
  new MutationObserver(look).observe(document, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
  });
  const frame = () => {
    look();
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

/** Each todo's values in the order they were shown, as `title|done`. */
async function rendered(page: Page): Promise<Map<string, string[]>> {
  const seen = await page.evaluate(() => (window as unknown as { __seen: Seen[] }).__seen);
  const byKey = new Map<string, string[]>();
  for (const { key, title, done } of seen) {
    byKey.set(key, [...(byKey.get(key) ?? []), `${title}|${done}`]);
  }
  return byKey;
}

/** No todo showed a value again after a newer one had replaced it. */
function expectNoFlickerBack(byKey: Map<string, string[]>): void {
  for (const [key, values] of byKey) {
    expect(new Set(values).size, `${key} showed ${values.join(' → ')}`).toBe(values.length);
  }
}

async function open(page: Page, app: ExampleApp, path = ''): Promise<void> {
  await page.addInitScript(recordRenders);
  await page.goto(app.url + path);
  // The form shows once the outbox is connected; a failure to connect shows its reason instead.
  await expect(page.getByRole('button', { name: 'Add' })).toBeVisible({ timeout: 30_000 });
  expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
}

const item = (page: Page, title: string) =>
  page
    .getByRole('listitem')
    .filter({ has: page.locator('.title', { hasText: new RegExp(`^${title}$`) }) });

async function add(page: Page, title: string): Promise<void> {
  await page.getByLabel('New todo').fill(title);
  await page.getByRole('button', { name: 'Add' }).click();
  await expect(item(page, title)).toHaveCount(1);
}

/** Adds a todo online and waits until it is saved and the app keeps a list that has it. */
async function addSaved(page: Page, api: TodoApi, title: string): Promise<void> {
  await add(page, title);
  await expect.poll(async () => (await api.todos()).map((t) => t.title)).toContain(title);
  await expect(item(page, title)).toHaveAttribute('data-status', 'synced');
  // The app's refetch after the settle has landed: it keeps that list for offline starts.
  await expect
    .poll(() => page.evaluate(() => localStorage.getItem('todos') ?? ''))
    .toContain(JSON.stringify(title));
}

async function rename(page: Page, from: string, to: string): Promise<void> {
  await page.getByRole('button', { name: `Edit ${from}` }).click();
  await page.getByLabel('Title').fill(to);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(item(page, to)).toHaveCount(1);
}

for (const mode of ['dev', 'build'] as Mode[]) {
  test.describe(mode === 'dev' ? 'in vite dev' : 'in a build (vite preview)', () => {
    // Two dev servers in one folder would share Vite's dependency cache.
    if (mode === 'dev') test.describe.configure({ mode: 'serial' });
    let app: ExampleApp | undefined;
    test.afterEach(async () => {
      await app?.stop();
      app = undefined;
    });

    test('offline create, edit and delete each reach the server once after the tab closed, and no settled edit flickers back', async ({
      context,
      api,
    }) => {
      test.setTimeout(120_000);
      app = await ExampleApp.start(mode, api);
      const page = await context.newPage();
      await open(page, app);

      // Online: two todos reach the server.
      await add(page, 'Bread');
      await add(page, 'Eggs');
      await expect
        .poll(async () => (await api.todos()).map((t) => t.title))
        .toEqual(['Bread', 'Eggs']);
      await expect(page.locator('li[data-status="synced"]')).toHaveCount(2);
      const [bread, eggs] = await api.todos();

      // Offline: an edit, a second edit of the same todo, a delete, a create and its edit.
      await context.setOffline(true);
      await expect(page.getByRole('alert')).toContainText('You are offline');
      await rename(page, 'Bread', 'Rye bread');
      // The box shows what the outbox holds: it turns once the edit is queued.
      await page.getByLabel('Done: Rye bread').click();
      await expect(page.getByLabel('Done: Rye bread')).toBeChecked();
      await page.getByRole('button', { name: 'Delete Eggs' }).click();
      await add(page, 'Milk');
      await rename(page, 'Milk', 'Oat milk');
      await expect(item(page, 'Eggs')).toHaveCount(0);
      await expect(page.getByLabel('Done: Rye bread')).toBeChecked();
      await expect(page.locator('li[data-status="synced"]')).toHaveCount(0);
      const offline = await rendered(page);
      expectNoFlickerBack(offline);
      await page.close();

      // Online with no tab open: the worker sends each change once.
      await context.setOffline(false);
      await expect
        .poll(async () => (await api.todos()).map(({ title, done }) => ({ title, done })), {
          timeout: 30_000,
        })
        .toEqual([
          { title: 'Rye bread', done: true },
          { title: 'Oat milk', done: false },
        ]);
      const [rye, oat] = await api.todos();
      // The outbox merged the two edits of Bread and the create of Milk with its edit (SPEC §6):
      // one update applied, so one version replaced; the create applied once, at revision 1.
      expect(rye).toMatchObject({ id: bread!.id, revision: 2 });
      expect(await api.replaced(bread!.id, 2)).toHaveLength(1);
      expect(oat!.revision).toBe(1);
      // The delete: applied once (one version replaced), the todo gone.
      expect((await api.get(`/api/todos/${eggs!.id}`)).status).toBe(404);
      expect(await api.replaced(eggs!.id, 3)).toHaveLength(1);

      // A settled edit while the app's own refetch is slow: the list keeps the new value.
      const again = await context.newPage();
      await open(again, app);
      await expect(item(again, 'Rye bread')).toHaveAttribute('data-status', 'synced');
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held = 0;
      let answered = 0;
      await context.route('**/api/todos', async (route) => {
        if (route.request().method() !== 'GET') return route.fallback();
        held++;
        await gate;
        await route.continue();
        answered++;
      });
      await rename(again, 'Rye bread', 'Sourdough');
      await expect.poll(async () => (await api.todos())[0]?.title).toBe('Sourdough');
      // Settled (no row left) while the app's refetch is held: what does the list show?
      await expect(again.locator('li[data-key]:not([data-status="synced"])')).toHaveCount(0);
      await expect.poll(() => held).toBeGreaterThan(0);
      expect(answered).toBe(0);
      expectNoFlickerBack(await rendered(again));
      await expect(item(again, 'Sourdough')).toHaveAttribute('data-status', 'synced');
      release();
      await expect.poll(() => answered).toBe(held);
      await expect(item(again, 'Sourdough')).toHaveAttribute('data-status', 'synced');
      const online = await rendered(again);
      expectNoFlickerBack(online);
      expect([...online.values()]).toContainEqual(['Rye bread|true', 'Sourdough|true']);
    });

    if (mode === 'dev') {
      test('without devOptions.navigateFallback the worker throws as it first runs, and the page says so at once', async ({
        context,
        api,
      }) => {
        // The guide's config less the one option (docs/vite-pwa.md, "Pitfalls").
        const config = readFileSync(join(EXAMPLE, 'vite.config.ts'), 'utf8');
        const without = config.replace(", navigateFallback: 'index.html'", '');
        expect(without).not.toBe(config);
        writeFileSync(join(EXAMPLE, 'vite.no-fallback.config.ts'), without);
        try {
          app = await ExampleApp.start('dev', api, 'vite.no-fallback.config.ts');
          const page = await context.newPage();
          await page.goto(app.url);
          await expect(page.getByRole('alert')).toContainText(
            'The outbox could not start: No service worker can serve this page',
          );
          await expect(page.getByRole('alert')).toContainText(
            'ServiceWorker script evaluation failed',
          );
        } finally {
          rmSync(join(EXAMPLE, 'vite.no-fallback.config.ts'), { force: true });
        }
      });
    }
  });
}

test.describe('in a build (vite preview)', () => {
  test('opens offline from the precache with the last list, and queues what is added', async ({
    context,
    api,
  }) => {
    const app = await ExampleApp.start('build', api);
    try {
      const page = await context.newPage();
      await open(page, app);
      await addSaved(page, api, 'Bread');

      await context.setOffline(true);
      await page.reload();
      await expect(page.getByRole('heading', { name: 'Todos' })).toBeVisible();
      await expect(item(page, 'Bread')).toHaveAttribute('data-status', 'synced');
      await add(page, 'Written offline');
      await expect(item(page, 'Written offline')).not.toHaveAttribute('data-status', 'synced');
    } finally {
      await app.stop();
    }
  });

  test('a todo the worker saved with every tab closed shows when the app next opens offline', async ({
    context,
    api,
  }) => {
    const app = await ExampleApp.start('build', api);
    try {
      const page = await context.newPage();
      await open(page, app);
      await addSaved(page, api, 'Bread');

      // Written offline, sent by the worker once the network is back and no tab is open: no
      // page fetched a list that has it.
      await context.setOffline(true);
      await add(page, 'Milk');
      await page.close();
      await context.setOffline(false);
      await expect
        .poll(async () => (await api.todos()).map((t) => t.title), { timeout: 30_000 })
        .toEqual(['Bread', 'Milk']);

      await context.setOffline(true);
      const again = await context.newPage();
      await open(again, app);
      await expect(again.getByRole('alert')).toContainText('You are offline');
      await expect(item(again, 'Bread')).toHaveAttribute('data-status', 'synced');
      await expect(item(again, 'Milk')).toHaveAttribute('data-status', 'synced');
      await expect(again.locator('li[data-key]')).toHaveCount(2);
    } finally {
      await app.stop();
    }
  });

  test('a todo the API refuses shows as not saved in the list and the inspector, and Discard drops it', async ({
    context,
    api,
  }) => {
    const app = await ExampleApp.start('build', api);
    try {
      const page = await context.newPage();
      await open(page, app, '?inspector');
      // The API takes titles of 1 to 200 characters: 422, which the outbox does not retry.
      const long = 'x'.repeat(201);
      await add(page, long);
      const refused = item(page, long);
      await expect(refused).toHaveAttribute('data-status', 'blocked');
      await expect(refused).toContainText('Not saved — needs your attention');
      await expect(page.getByRole('alert')).toContainText('Some changes were not saved');
      const inspector = page.locator('outbox-inspector');
      await expect(
        inspector
          .getByRole('row')
          .filter({ hasText: 'todos create' })
          .filter({ hasText: 'blocked' }),
      ).toHaveCount(1);

      await refused.getByRole('button', { name: 'Discard' }).click();
      await expect(refused).toHaveCount(0);
      await expect(inspector.getByRole('row').filter({ hasText: 'todos create' })).toHaveCount(0);
      await expect(page.getByRole('alert')).toHaveCount(0);
      expect(await api.todos()).toEqual([]);
    } finally {
      await app.stop();
    }
  });

  test('mounts the outbox inspector behind ?inspector only', async ({ context, api }) => {
    const app = await ExampleApp.start('build', api);
    try {
      const page = await context.newPage();
      await open(page, app);
      await expect(page.locator('outbox-inspector')).toHaveCount(0);
      await open(page, app, '?inspector');
      await context.setOffline(true);
      await add(page, 'Seen in the inspector');
      const inspector = page.locator('outbox-inspector');
      await expect(inspector.getByRole('row').filter({ hasText: 'todos create' })).toHaveCount(1);
      await expect(inspector.locator('[part="health"]')).toContainText('1 rows');
    } finally {
      await app.stop();
    }
  });
});
