import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test as base, expect } from '@playwright/test';
import { ServerProcess } from '../support/server-process.ts';

/**
 * examples/vite-pwa as its user runs it (SPEC §22): built by Vite with vite-plugin-pwa from the
 * packed tarballs (scripts/example.mjs prepares it in .tmp/examples/vite-pwa; `npm test` runs that
 * first), served by the installed `sw-outbox-server` bin, one worker doing Workbox precaching
 * and the outbox.
 */
const EXAMPLE = join(import.meta.dirname, '..', '..', '.tmp', 'examples', 'vite-pwa');
const USER = 'alice';

class ExampleServer extends ServerProcess {
  static async start(): Promise<ExampleServer> {
    const { url, child, dir } = await ServerProcess.launch({
      command: [join(EXAMPLE, 'node_modules', '.bin', 'sw-outbox-server'), '--port', '0'],
      args: ['--admin', '--static', join(EXAMPLE, 'dist')],
      cwd: EXAMPLE,
      label: 'example',
      timeoutMs: 15_000,
    });
    return new ExampleServer(url, child, dir);
  }

  async titles(): Promise<string[]> {
    const response = await this.fetch('/api/notes', { headers: await this.auth(USER) });
    const { items } = (await response.json()) as { items: { title: string }[] };
    return items.map((note) => note.title).sort();
  }
}

const test = base.extend<{ server: ExampleServer }>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright requires the fixtures argument to be destructured.
  server: async ({}, use) => {
    const server = await ExampleServer.start();
    await use(server);
    await server.stop();
  },
});

test.skip(
  !existsSync(join(EXAMPLE, 'dist', 'sw.js')),
  'the example is not built: run `node scripts/example.mjs` (npm test does)',
);

test('notes added offline reach the server once each after the tab is closed and the browser is online again', async ({
  context,
  server,
}) => {
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  await expect(page.getByRole('status')).toHaveText('All changes are on the server.');

  await context.setOffline(true);
  for (const title of ['Bread', 'Eggs', 'Milk']) {
    await page.getByLabel('Note').fill(title);
    await page.getByRole('button', { name: 'Add' }).click();
  }
  await expect(page.getByRole('status')).toHaveText('3 waiting');
  await page.close();

  await context.setOffline(false);
  await expect.poll(async () => (await server.stats(USER)).effects, { timeout: 30_000 }).toBe(3);
  const stats = await server.stats(USER);
  expect(Object.values(stats.effectsByKey)).toEqual([1, 1, 1]);
  expect(await server.titles()).toEqual(['Bread', 'Eggs', 'Milk']);
});

test('the app opens offline from the precache', async ({ context, server }) => {
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  await expect(page.getByRole('status')).toHaveText('All changes are on the server.');

  await context.setOffline(true);
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Notes' })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText('All changes are on the server.');
  await page.getByLabel('Note').fill('Written offline');
  await page.getByRole('button', { name: 'Add' }).click();
  await expect(page.getByRole('status')).toHaveText('1 waiting');
});
