import { expect, test } from './fixtures.ts';

/**
 * The demo used as a person would (SPEC §16; G1, G2, G4): edits made while the server refuses
 * them, the tab closed, the server back — every edit lands exactly once, with no tab open, and
 * the reopened inspector shows how (receipts, replays, the worker's log).
 */
test('edits made offline reach the server exactly once after the tab is closed and the server is back', async ({
  demo,
  demoServer,
  user,
}) => {
  await demo.open();
  // Before sign-in only the sign-in form shows: no editor whose form could be submitted.
  await expect(demo.page.locator('#signin')).toBeVisible();
  await expect(demo.page.locator('#editor')).toBeHidden();
  await expect(demo.page.locator('#inspector')).toBeHidden();
  await demo.signIn(user);
  await expect(demo.page.locator('#cards .empty')).toBeVisible();

  await demo.addNote('Shopping', 'milk');
  await demo.addNote('Old list', 'socks');
  // Each note settles to one synced card. A list fetched after the first settled may already hold
  // the second while its create's answer is on the way: for that moment it shows twice.
  await expect(demo.card('Shopping').locator('.badge')).toHaveText(['synced']);
  await expect(demo.card('Old list').locator('.badge')).toHaveText(['synced']);

  await demo.control('offline');
  await expect(demo.page.locator('[data-banner="offline"]')).toBeVisible();
  // Committed after the server is back, with the answers lost on the way: the outbox must resend.
  await demo.control('drop');

  await demo.editNote('Shopping', { body: 'milk, eggs, bread' });
  await demo.addNote('Call the plumber', 'Tuesday');
  // The create was tried and refused with a 503, an answer that says nothing was applied: an
  // edit of it merges into it (SPEC §6), one create with the new title and no intent row.
  await expect(demo.card('Call the plumber').locator('.badge')).toHaveText('deferred');
  await demo.editNote('Call the plumber', { title: 'Call the plumber before 10' });
  await demo.deleteNote('Old list');

  await expect(demo.card('Call the plumber before 10').locator('.chip')).toHaveText([
    'create · deferred',
  ]);
  await expect(demo.inspector('rows').locator('tr[data-row]')).toHaveCount(3);
  await expect(demo.figure('edits-made')).toHaveText('6');
  await demo.screenshot('editor', 'offline-editor');
  await demo.screenshot('inspector', 'offline-inspector');

  await demo.close();
  await demoServer.goOnline(user);

  // No tab is open: the worker's own retry timer sends everything (SPEC §12).
  await expect
    .poll(async () => (await demoServer.stats(user)).effects, { timeout: 20_000 })
    .toBe(5);

  await demo.open();
  await expect(demo.inspector('rows').locator('.empty')).toHaveText(/outbox is empty/);
  // Six edits made, five requests: the plumber's create carries its edit.
  await expect(demo.figure('effects')).toHaveText('5');
  await expect(demo.figure('receipts')).toHaveText('5');
  await expect(demo.figure('applied-twice')).toHaveText('0');
  await expect(demo.page.locator('.verdict')).toHaveAttribute('data-verdict', 'ok');
  // The inspector lists a receipt for each of the five requests, each key applied once.
  const receipts = demo.inspector('receipts').locator('tbody tr');
  await expect(receipts).toHaveCount(5);
  await expect(receipts.locator('td:nth-child(4)')).toHaveText(Array(5).fill(/^20[01]\b/));
  const receiptKeys = await receipts.evaluateAll((rows) => rows.map((r) => r.dataset.request));
  await expect(demo.page.locator('#events [data-event="settled"]').first()).toBeVisible();

  await expect(demo.card('Shopping').locator('.card-body')).toHaveText('milk, eggs, bread');
  await expect(demo.card('Call the plumber before 10').locator('.badge')).toHaveText(['synced']);
  await expect(demo.card('Old list')).toHaveCount(0);
  await demo.screenshot('editor', 'synced-editor');
  await demo.screenshot('inspector', 'synced-inspector');

  const stats = await demoServer.stats(user);
  expect(Object.values(stats.effectsByKey)).toEqual([1, 1, 1, 1, 1]);
  expect(new Set(receiptKeys)).toEqual(new Set(Object.keys(stats.effectsByKey)));
  // The two dropped answers came back as replays of the stored response, not second writes.
  expect(stats.replays).toBeGreaterThanOrEqual(2);
  const notes = await demoServer.notes(user);
  expect(
    notes
      .map(({ title, body }) => ({ title, body }))
      .sort((a, b) => a.title.localeCompare(b.title)),
  ).toEqual([
    { title: 'Call the plumber before 10', body: 'Tuesday' },
    { title: 'Shopping', body: 'milk, eggs, bread' },
  ]);
});
