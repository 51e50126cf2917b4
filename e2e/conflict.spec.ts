import { expect, test } from './support/fixtures.ts';

test('a conflict resend is durable before it is sent; after a lost answer and a worker restart the same key is replayed once', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ persist: true, sw: { lease: '1500' } });
  const workers = await app.controlWorkers();
  const note = await server.createNote(user, 'base', `seed-${user}`);
  // Another device edits first: the outbox's edit of revision 1 will meet revision 2.
  const edited = await fetch(`${server.url}/__faults/edit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, id: note.id, title: 'theirs' }),
  });
  expect(edited.ok).toBe(true);
  const original = await app.value<{ id: string; requestId: string }>('enqueue', {
    collection: 'notes',
    kind: 'update',
    targetId: note.id,
    baseRevision: note.revision,
    payload: { body: 'mine' },
  });
  const resend = requests.hold(
    (entry) =>
      entry.method === 'PATCH' && entry.from === 'worker' && entry.key !== original.requestId,
  );
  const held = await resend.reached;
  const successorId = held.key!;
  // G5: the successor row is in IndexedDB before any request with its key reaches the server.
  const successor = await app.storedRow(successorId);
  expect(successor).toMatchObject({ successorOf: original.id, baseRevision: 2, state: 'sending' });
  expect(
    (successor!.conflict as { predecessor: { requestId: string } }).predecessor.requestId,
  ).toBe(original.requestId);
  expect((await server.stats(user)).effectsByKey[successorId]).toBeUndefined();

  // The resend commits on the server, its answer is lost, and the worker dies.
  await server.fault({ kind: 'drop-after-commit', route: 'PATCH /api/notes/:id', user, count: 1 });
  resend.release();
  await expect.poll(async () => (await server.stats(user)).effectsByKey[successorId]).toBe(1);
  await workers.stopAll();

  // A new worker start replays the same key from the stored row: the server answers from its ledger.
  await expect
    .poll(
      async () => {
        await app.call('flush', { force: true });
        return app.total();
      },
      { timeout: 20_000 },
    )
    .toBe(0);
  const stats = await server.stats(user);
  expect(stats.effectsByKey[successorId]).toBe(1);
  expect(stats.effectsByKey[original.requestId]).toBeUndefined();
  expect((await server.note(user, note.id))?.revision).toBe(3);
  expect((await server.note(user, note.id))?.body).toBe('mine');
  const used = new Set(
    requests
      .writes()
      .filter((entry) => entry.method === 'PATCH')
      .map((entry) => entry.key),
  );
  expect(used).toEqual(new Set([original.requestId, successorId]));

  const ledger = await app.value<Array<{ successorId: string; originalId: string }>>('conflicts');
  expect(ledger).toEqual([
    expect.objectContaining({ successorId, originalId: original.requestId }),
  ]);

  // The ledger survives another worker restart.
  await workers.stopAll();
  await expect
    .poll(async () => (await app.value<unknown[]>('conflicts')).length, { timeout: 10_000 })
    .toBe(1);
});
