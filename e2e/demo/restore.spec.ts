import { expect, test } from './fixtures.ts';

/**
 * What a conflict overwrote stays recoverable (SPEC §10.1): another device edits a note, this
 * device's offline edit overwrites it (last writer wins), the conflict ledger shows the
 * overwritten version beside the final one, and one button writes the other device's version
 * back through the outbox — a new edit, applied once, at the next revision.
 */
test('the conflict ledger shows what was overwritten and restores the other device’s version', async ({
  demo,
  demoServer,
  user,
}) => {
  await demo.openAs(user);
  await demo.editOverAnotherDevice();

  const entry = demo.inspector('conflicts').locator('li.conflict');
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText('applied as revision 3');
  const overwritten = entry.locator('[data-version="overwritten"]');
  const final = entry.locator('[data-version="final"]');
  await expect(overwritten).toContainText('overwritten: revision 2');
  await expect(overwritten).toContainText('Trip plan · edited elsewhere');
  await expect(overwritten).toContainText('Lisbon in May');
  await expect(final).toContainText('final: revision 3');
  await expect(final).toContainText('Lisbon in June');
  expect((await demoServer.stats(user)).effects).toBe(2);

  await entry.getByRole('button', { name: 'Restore overwritten version' }).click();
  await expect(entry.locator('.restored')).toContainText('Restored');
  await expect(entry.getByRole('button', { name: /Restore/ })).toHaveCount(0);
  const restored = demo.card('Trip plan · edited elsewhere');
  await expect(restored).toContainText('Lisbon in May');
  await expect(restored.locator('.badge')).toHaveText('synced');
  await expect(restored.locator('.card-meta')).toContainText('revision 4');
  await expect(demo.page.locator('.verdict')).toHaveAttribute('data-verdict', 'ok');
  await demo.screenshot('inspector', 'restore-inspector');

  // The server holds the other device's text again, one revision on, from exactly one more write.
  const stats = await demoServer.stats(user);
  expect(stats.effects).toBe(3);
  expect(Object.values(stats.effectsByKey)).toEqual([1, 1, 1]);
  const [note] = await demoServer.notes(user);
  expect(note).toMatchObject({
    title: 'Trip plan · edited elsewhere',
    body: 'Lisbon in May',
    revision: 4,
  });
  // Still one conflict: the restore met none.
  await expect(entry).toHaveCount(1);
});
