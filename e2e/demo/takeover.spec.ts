import { expect, test } from './fixtures.ts';

/**
 * The demo's "stop the worker's holder" (SPEC §4, §18 scenario 11; G2, G3): the holder stops
 * while its request is held up on the server. The next holder waits out the lease, claims the
 * row with a higher fence, resends the same key and gets the stored answer: one effect.
 */
test('a holder stopped mid-send is taken over after the lease and the note is applied once', async ({
  demo,
  demoServer,
  user,
}) => {
  await demo.openAs(user);
  const firstHolder = await demo.page.locator('#holder code').getAttribute('title');

  await demo.control('slow');
  await expect(demo.page.locator('[data-faults]')).toContainText('delay');
  await demo.addNote('Slow note', 'held up on the server');
  await expect(demo.card('Slow note').locator('.badge')).toHaveText('sending');

  await demo.control('stop-holder');
  await expect(demo.page.locator('#holder')).toContainText('holder #2');
  const secondHolder = await demo.page.locator('#holder code').getAttribute('title');
  expect(secondHolder).not.toBe(firstHolder);
  // The stopped holder's claim is still live: the row waits for its lease to end.
  await expect(demo.inspector('rows').locator('tr[data-row]')).toContainText('not current');
  await demo.screenshot('inspector', 'takeover-inspector');

  await expect(demo.card('Slow note').locator('.badge')).toHaveText(['synced'], {
    timeout: 20_000,
  });
  await expect(
    demo.page.locator('#events [data-event="claimed"]').filter({ hasText: 'fence 2' }),
  ).toHaveCount(1);
  await expect(demo.figure('effects')).toHaveText('1');
  await expect(demo.page.locator('.verdict')).toHaveAttribute('data-verdict', 'ok');

  const stats = await demoServer.stats(user);
  expect(Object.values(stats.effectsByKey)).toEqual([1]);
  expect((await demoServer.notes(user)).map((note) => note.title)).toEqual(['Slow note']);
});
