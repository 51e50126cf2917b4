import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator } from '@playwright/test';
import { expect, test } from './support/fixtures.ts';

/**
 * SPEC §23: `<outbox-inspector>` (`sw-outbox/inspector`) mounted in the test page, driven as a
 * person would — through its buttons only. A row the server refused is retried from the
 * inspector and applied once; what a revision conflict overwrote is restored from the ledger and
 * applied once, at the next revision. The server counts every effect.
 */

/** Where the tests write their screenshots; `docs/` keeps the chosen ones. */
const SCREENSHOTS = join('docs', 'screenshots', 'tmp');

async function shoot(inspector: Locator, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await inspector.screenshot({ path: join(SCREENSHOTS, `${name}.png`), animations: 'disabled' });
}

test.use({ viewport: { width: 880, height: 900 } });

test('a blocked row is retried from the inspector’s button and applied once; the health line names the cause until then', async ({
  context,
  openApp,
  server,
  user,
}) => {
  // The server turns the first create away for good (403) once; a retry goes through.
  let refused = false;
  await context.route('**/api/notes', async (route) => {
    if (route.request().method() !== 'POST' || refused) return route.fallback();
    refused = true;
    await route.fulfill({
      status: 403,
      contentType: 'application/problem+json',
      body: JSON.stringify({
        type: 'forbidden',
        title: 'Forbidden',
        status: 403,
        detail: 'not today',
      }),
    });
  });
  const app = await openApp();
  await app.page.evaluate(() =>
    (globalThis as unknown as { e2e: { inspect(): void } }).e2e.inspect(),
  );
  const inspector = app.page.locator('outbox-inspector');
  await expect(inspector.locator('[data-section="rows"] .empty')).toHaveText(/outbox is empty/);

  const id = await app.createNote('retry me');
  const row = inspector.locator(`tr[data-row="${id}"]`);
  await expect(row.locator('.badge')).toHaveText('blocked');
  await expect(inspector.locator('.blocked-detail')).toContainText('http_403');
  await expect(inspector.locator('.blocked-detail')).toContainText('not today');
  await expect(inspector.locator('[part="health"]')).toHaveAttribute('data-stalled', 'blocked');
  await shoot(inspector, 'inspector-blocked');
  expect((await server.stats(user)).effects).toBe(0);

  await row.getByRole('button', { name: 'Retry' }).click();
  await expect(inspector.locator('[data-section="rows"] .empty')).toBeVisible();
  await expect(
    inspector.locator(`[data-section="receipts"] tr[data-request="${id}"]`),
  ).toContainText('201');
  await expect(inspector.locator('[part="health"]')).toHaveAttribute('data-stalled', '');
  await expect(inspector.locator('[part="health"]')).toContainText('healthy');
  expect((await server.stats(user)).effectsByKey).toEqual({ [id]: 1 });
  expect((await server.sends(user, id)).map((r) => r.status)).toEqual([201]);
});

test('what a conflict overwrote is shown beside the final version and restored from the inspector’s button, once', async ({
  openApp,
  server,
  user,
}) => {
  const note = await server.createNote(user, 'base', `seed-${user}`);
  await server.editElsewhere(user, note.id, 'theirs');
  const app = await openApp();
  await app.page.evaluate(() =>
    (globalThis as unknown as { e2e: { inspect(): void } }).e2e.inspect(),
  );
  const inspector = app.page.locator('outbox-inspector');

  // An edit made from revision 1 meets revision 2: resent once at 2, applied as 3.
  await app.value('enqueue', {
    collection: 'notes',
    kind: 'update',
    targetId: note.id,
    baseRevision: note.revision,
    payload: { title: 'mine' },
  });
  const entry = inspector.locator('li.conflict');
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText('applied as revision 3');
  await expect(entry.locator('[data-version="overwritten"]')).toContainText('theirs');
  await expect(entry.locator('[data-version="final"]')).toContainText('mine');
  await shoot(inspector, 'inspector-conflict');
  expect((await server.note(user, note.id))?.title).toBe('mine');

  await entry.getByRole('button', { name: 'Restore overwritten version' }).click();
  await expect(entry.locator('.restored')).toContainText('Restored');
  await expect(entry.getByRole('button', { name: /Restore/ })).toHaveCount(0);
  await expect.poll(async () => (await server.note(user, note.id))?.revision).toBe(4);
  expect(await server.note(user, note.id)).toMatchObject({ title: 'theirs', revision: 4 });
  await expect(inspector.locator('[data-section="rows"] .empty')).toBeVisible();
  await shoot(inspector, 'inspector-restored');
  // One effect per key: the seed, the resend, the restore (the 412'd original applied nothing).
  const effects = (await server.stats(user)).effectsByKey;
  expect(Object.values(effects)).toEqual([1, 1, 1]);
  await expect(entry).toHaveCount(1);
});
