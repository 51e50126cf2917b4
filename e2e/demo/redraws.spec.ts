import { expect, test } from './fixtures.ts';

/*
 * The page redraws a view only when what it reads changes: these are the changes that come from
 * outside the outbox's own notices.
 */

/**
 * A settled note's card (SPEC §17): once the row has left the outbox and its receipt is read, the
 * card shows the note as synced. The server's list, read again once the outbox drains (when the
 * page saw the row before it settled), is held up here so that the page draws the card at least
 * once (its counters refresh every 2 s) between the receipt and the list: that draw shows the
 * settling row, and the card must not keep it.
 */
test('a note whose create settled shows synced while the server’s list is slow to answer', async ({
  context,
  demo,
  user,
}) => {
  await demo.openAs(user);
  await context.route(
    (url) => url.pathname === '/api/notes',
    async (route) => {
      if (route.request().method() === 'GET') await new Promise((r) => setTimeout(r, 4_000));
      return route.fallback();
    },
  );

  await demo.addNote('Slow list', 'answered late');
  await expect(demo.card('Slow list').locator('.badge')).toHaveText(['synced']);
  await expect(demo.page.locator('#progress')).toContainText('All changes are on the server.');
});

/** The browser's own network state (DevTools → Network → Offline) has a banner of its own. */
test('the offline banner follows the browser’s network state both ways', async ({
  context,
  demo,
  user,
}) => {
  await demo.openAs(user);
  const banner = demo.page.getByText('This browser is offline.');
  await expect(banner).toHaveCount(0);
  await context.setOffline(true);
  await expect(banner).toBeVisible();
  await context.setOffline(false);
  await expect(banner).toHaveCount(0);
});
