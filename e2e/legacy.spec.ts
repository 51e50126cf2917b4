import { randomBytes } from 'node:crypto';
import type { Page } from '@playwright/test';
import { expect, test } from './support/fixtures.ts';

interface V0Api {
  legacy: {
    enqueue(input: Record<string, unknown>): Promise<{ id: string }>;
    get(id: string): Promise<Record<string, unknown> | undefined>;
    send(id: string, token: string): Promise<{ status: number; deleted: boolean }>;
  };
}

const v0 = (page: Page) => ({
  enqueue: (input: Record<string, unknown>) =>
    page.evaluate((i) => (globalThis as unknown as V0Api).legacy.enqueue(i), input),
  get: (id: string) => page.evaluate((i) => (globalThis as unknown as V0Api).legacy.get(i), id),
  send: (id: string, token: string) =>
    page.evaluate(([i, t]) => (globalThis as unknown as V0Api).legacy.send(i, t), [
      id,
      token,
    ] as const),
});

test('a v0 tab sending a row keeps it: the current bundle writes a successor, sends nothing until the v0 receipt, and v0 rewrites keep v1 fields', async ({
  context,
  baseURL,
  openApp,
  server,
  user,
  requests,
}) => {
  const note = await server.createNote(user, 'start', `seed-${user}`);
  const app = await openApp({ sw: { lease: '10000' } });
  const legacyPage = await context.newPage();
  await legacyPage.goto(`${baseURL}/legacy/`);
  await legacyPage.waitForFunction(() => 'legacy' in globalThis);
  const legacy = v0(legacyPage);

  // A v0 row, with a field only v0 knows about.
  const legacyId = `legacy-${randomBytes(12).toString('hex')}`;
  await legacy.enqueue({
    id: legacyId,
    owner: user,
    collection: 'notes',
    kind: 'update',
    targetId: note.id,
    payload: { title: 'from v0' },
    baseRevision: note.revision,
    method: 'PATCH',
    url: `/api/notes/${note.id}`,
    extra: { v0Field: 'keep-me' },
  });

  // The v1 worker tries it first and is turned away: v1 fields land on the v0 row.
  await server.fault({
    kind: 'unavailable',
    route: 'PATCH /api/notes/:id',
    user,
    count: 1,
    retryAfter: 3600,
  });
  await app.call('flush');
  await expect
    .poll(async () => (await app.value<{ status: string } | undefined>('row', legacyId))?.status)
    .toBe('deferred');

  // The v0 tab sends it anyway (it knows nothing of backoff or claims); the request is held open.
  const held = requests.hold((entry) => entry.from === 'page' && entry.key === legacyId);
  const sending = legacy.send(legacyId, await server.token(user));
  await held.reached;
  const rewritten = (await legacy.get(legacyId))!;
  expect(rewritten).toMatchObject({
    state: 'sending',
    v0Field: 'keep-me',
    writer: expect.any(Object),
  });
  expect(rewritten).toHaveProperty('claim.fence', 1);
  expect(rewritten).toHaveProperty('evidence.attemptCount', 1);

  // The current bundle edits the same record: a successor, and nothing goes out from the new side.
  const workerWritesBefore = requests.writes().filter((entry) => entry.from === 'worker').length;
  const edit = await app.value<{ id: string; outcome: string }>('enqueue', {
    collection: 'notes',
    kind: 'update',
    targetId: note.id,
    baseRevision: note.revision,
    payload: { title: 'from v1' },
  });
  expect(edit.outcome).toBe('successor');
  expect(await app.value('row', edit.id)).toMatchObject({
    status: 'waiting',
    row: { successorOf: legacyId },
  });
  await app.call('flush', { force: true });
  expect(requests.writes().filter((entry) => entry.from === 'worker')).toHaveLength(
    workerWritesBefore,
  );

  // The v0 receipt deletes only the v0 row; the successor goes out after it.
  held.release();
  expect(await sending).toEqual({ status: 200, deleted: true });
  expect(await legacy.get(legacyId)).toBeUndefined();
  expect(await app.value('row', edit.id)).toMatchObject({ id: edit.id });
  await expect
    .poll(async () => {
      await app.call('flush');
      return (await app.value<unknown[]>('rows')).length;
    })
    .toBe(0);

  expect(await server.note(user, note.id)).toMatchObject({ title: 'from v1' });
  const stats = await server.stats(user);
  expect(stats.effectsByKey[legacyId]).toBe(1);
  expect(Object.values(stats.effectsByKey).every((count) => count === 1)).toBe(true);
  // The v0 row went out twice in all — the v1 attempt turned away, then v0's own — and every
  // write of the new side came after v0's.
  const writes = requests.writes();
  expect(writes.filter((entry) => entry.key === legacyId).map((entry) => entry.from)).toEqual([
    'worker',
    'page',
  ]);
  const v0Sent = writes.findIndex((entry) => entry.from === 'page' && entry.key === legacyId);
  const newSide = writes.findIndex((entry) => entry.from === 'worker' && entry.key !== legacyId);
  expect(newSide).toBeGreaterThan(v0Sent);
});
