import { expect, test } from './fixtures.ts';

/**
 * A revision conflict provoked through the demo (SPEC §10; G5): an edit made offline from
 * revision 1, "another device" moving the note to revision 2, then the server back. The outbox
 * stores a resend at the current revision, sends it once, and the conflict ledger shows what
 * was overwritten.
 */
test('an edit that meets another device’s edit is resent once and found in the conflict ledger', async ({
  demo,
  demoServer,
  user,
}) => {
  await demo.openAs(user);
  await demo.editOverAnotherDevice();
  const entry = demo.inspector('conflicts').locator('li.conflict');
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText('the server was at revision 2');
  await expect(entry).toContainText('applied as revision 3');
  await expect(entry.locator('dd').filter({ hasText: 'the server sent its copy' })).toHaveCount(1);
  await expect(demo.figure('conflicts')).toHaveText('1');
  await expect(demo.figure('effects')).toHaveText('2');
  await expect(demo.page.locator('.verdict')).toHaveAttribute('data-verdict', 'ok');
  await expect(demo.card('Trip plan').locator('.card-meta')).toContainText('revision 3');
  await demo.screenshot('inspector', 'conflict-inspector');
  await demo.screenshot('editor', 'conflict-editor');

  // Last writer wins: this device's edit is what the server holds now, applied once.
  const stats = await demoServer.stats(user);
  expect(stats.effects).toBe(2);
  expect(Object.values(stats.effectsByKey)).toEqual([1, 1]);
  const [note] = await demoServer.notes(user);
  expect(note).toMatchObject({ title: 'Trip plan', body: 'Lisbon in June', revision: 3 });
});
