import { expect, test } from './support/fixtures.ts';
import { expectBadInputRefused } from './support/steps.ts';

test('invalid input to enqueue fails on the page with a typed error code, and the worker keeps serving', async ({
  openApp,
  server,
  user,
}) => {
  const app = await openApp();

  const { refusals } = await expectBadInputRefused(app, server, user, [
    {
      what: 'an intent of another owner',
      method: 'enqueue',
      args: [{ collection: 'notes', kind: 'create', owner: 'someone-else', payload: {} }],
      error: { code: 'owner_mismatch' },
    },
  ]);
  // The refusal of the intent with no collection names what is wrong with it.
  expect(
    (refusals[0] as { error: { details: { issues: unknown[] } } }).error.details.issues.length,
  ).toBeGreaterThan(0);
});
