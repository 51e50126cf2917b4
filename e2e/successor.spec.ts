import { expect, test } from './support/fixtures.ts';

interface View {
  id: string;
  status: string;
  row: { successorOf?: string; targetId: string; payload?: Record<string, unknown> };
}

test('edits made in two pages while an edit is in flight wait as one successor and reach the server in order', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const note = await server.createNote(user, 'start', `seed-${user}`);
  const pageA = await openApp({ sw: { lease: '10000' } });
  const pageB = await openApp({ sw: { lease: '10000' } });
  const held = requests.hold((entry) => entry.method === 'PATCH' && entry.from === 'worker');
  const edit = (payload: Record<string, unknown>) => ({
    collection: 'notes',
    kind: 'update',
    targetId: note.id,
    baseRevision: note.revision,
    payload,
  });

  const first = await pageA.value<{ id: string; outcome: string }>(
    'enqueue',
    edit({ title: 'a1' }),
  );
  expect(first.outcome).toBe('queued');
  await held.reached;

  const second = await pageB.value<{ id: string; outcome: string }>(
    'enqueue',
    edit({ title: 'b1', body: 'from b' }),
  );
  expect(second.outcome).toBe('successor');
  const third = await pageA.value<{ id: string; outcome: string }>(
    'enqueue',
    edit({ title: 'a2' }),
  );
  expect(third.outcome).toBe('coalesced');

  const waiting = (await pageB.value<View[]>('rows', { targetId: note.id })).filter(
    (view) => view.id !== first.id,
  );
  expect(waiting).toHaveLength(1);
  expect(waiting[0]!.row.successorOf).toBe(first.id);
  expect(waiting[0]!.status).toBe('waiting');
  // Nothing but the first edit has gone out while it is in flight (G4).
  expect(requests.writes().map((entry) => entry.key)).toEqual([first.id]);

  held.release();
  await expect
    .poll(async () => (await pageA.value<View[]>('rows')).length, { timeout: 20_000 })
    .toBe(0);

  const final = await server.note(user, note.id);
  expect(final).toMatchObject({ title: 'a2', body: 'from b' });
  const patches = requests.writes().filter((entry) => entry.method === 'PATCH');
  expect(patches[0]!.key).toBe(first.id);
  expect(JSON.parse(patches[0]!.body!)).toEqual({ title: 'a1' });
  expect(JSON.parse(patches.at(-1)!.body!)).toEqual({ title: 'a2', body: 'from b' });
  expect(Object.values((await server.stats(user)).effectsByKey).every((count) => count === 1)).toBe(
    true,
  );
});
