import { expect, test } from './support/fixtures.ts';

interface View {
  id: string;
  status: string;
  row: { successorOf?: string; targetId: string; request?: unknown };
}

test('an edit of a create still in flight becomes an intent row and reaches the server as an update of the real id', async ({
  openApp,
  server,
  user,
  requests,
}) => {
  const app = await openApp({ sw: { lease: '10000' } });
  const held = requests.hold((entry) => entry.method === 'POST' && entry.from === 'worker');

  const create = await app.value<{ id: string; targetId: string }>('enqueue', {
    collection: 'notes',
    kind: 'create',
    payload: { title: 'draft' },
  });
  expect(create.targetId).toBe(`pending:${create.id}`);
  await held.reached;

  const edit = await app.value<{ id: string; outcome: string }>('enqueue', {
    collection: 'notes',
    kind: 'update',
    targetId: create.targetId,
    payload: { title: 'final' },
  });
  expect(edit.outcome).toBe('intent');
  const intent = (await app.value<View[]>('rows')).find((view) => view.id === edit.id)!;
  expect(intent.status).toBe('intent');
  expect(intent.row.successorOf).toBe(create.id);
  expect(intent.row.request).toBeUndefined();

  held.release();
  await expect
    .poll(async () => (await app.value<View[]>('rows')).length, { timeout: 20_000 })
    .toBe(0);

  const [note] = await server.notes(user);
  expect(note).toMatchObject({ title: 'final', revision: 2 });
  const writes = requests.writes();
  expect(writes.map((entry) => `${entry.method} ${entry.path}`)).toEqual([
    'POST /api/notes',
    `PATCH /api/notes/${note!.id}`,
  ]);
  expect(writes[0]!.key).toBe(create.id);
  expect((await app.value<{ serverId: string }>('receipt', create.id)).serverId).toBe(note!.id);
});
