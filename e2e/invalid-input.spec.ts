import { AppPage } from './support/app-page.ts';
import { expect, test } from './support/fixtures.ts';

test('invalid input to enqueue fails on the page with a typed error code, and the worker keeps serving', async ({
  context,
  baseURL,
  server,
  user,
}) => {
  const app = await AppPage.open(context, baseURL!, { owner: user, login: user });

  const missing = await app.call('enqueue', {
    kind: 'create',
    payload: { title: 'no collection' },
  });
  expect(missing).toMatchObject({
    ok: false,
    error: { name: 'OutboxError', code: 'invalid_intent' },
  });
  expect(
    (missing as { error: { details: { issues: unknown[] } } }).error.details.issues.length,
  ).toBeGreaterThan(0);

  const badId = await app.call('enqueue', {
    collection: 'notes',
    kind: 'create',
    id: 'no spaces allowed',
    payload: {},
  });
  expect(badId).toMatchObject({ ok: false, error: { code: 'invalid_id' } });

  const unknown = await app.call('enqueue', { collection: 'widgets', kind: 'create', payload: {} });
  expect(unknown).toMatchObject({ ok: false, error: { code: 'unknown_collection' } });

  const otherOwner = await app.call('enqueue', {
    collection: 'notes',
    kind: 'create',
    owner: 'someone-else',
    payload: {},
  });
  expect(otherOwner).toMatchObject({ ok: false, error: { code: 'owner_mismatch' } });

  const badFilter = await app.call('rows', { collection: 7 });
  expect(badFilter).toMatchObject({ ok: false, error: { code: 'invalid_argument' } });

  // The same connection still answers, and a valid intent still goes out.
  expect(await app.call('stats')).toMatchObject({ ok: true, value: { total: 0 } });
  const id = await app.createNote('fine');
  await expect.poll(async () => (await server.stats(user)).effectsByKey[id]).toBe(1);
});
