import type { BrowserContext, Page } from '@playwright/test';
import { WorkerControl } from './support/cdp.ts';
import { expect, test } from './support/fixtures.ts';

/**
 * SPEC §22 in Chromium: a Workbox app that queued writes with `BackgroundSyncPlugin` switches to
 * `OutboxPlugin` with the import, and loses and repeats nothing — the worker stopped once between
 * the two steps of an entry's move — and the same app's writes through `OutboxPlugin` survive
 * response loss and a kill between requests with one effect each, counted by the server.
 */

interface Wb {
  register(script: string): Promise<void>;
  controlled(): Promise<void>;
  login(user: string): Promise<string>;
  write(path: string, title: string, token: string): Promise<number | string>;
  workboxEntries(): Promise<Array<{ requestData: { url: string } }>>;
  outboxRows(): Promise<
    Array<{
      id: string;
      targetId: string;
      payload: { body: string };
      successorOf?: string;
      state?: string;
    }>
  >;
  outboxDatabase(): Promise<Record<string, unknown[]>>;
}

declare const wb: Wb;

async function openApp(page: Page, baseURL: string, script: string) {
  await page.goto(`${baseURL}/workbox/`);
  await page.evaluate((s) => wb.register(s), script);
  await page.evaluate(() => wb.controlled());
}

/**
 * The API unreachable, as when the network is down, while scripts still load (an update can be
 * fetched): every request to `/api/` from page or worker fails at the network.
 */
async function apiDown(context: BrowserContext, down: boolean) {
  if (down) await context.route('**/api/**', (route) => route.abort('internetdisconnected'));
  else await context.unroute('**/api/**');
}

const titleOf = (row: { payload: { body: string } }) =>
  (JSON.parse(row.payload.body) as { title: string }).title;

/**
 * The API down and `count` writes made through BackgroundSyncPlugin (worker v1), alternating
 * between two URLs, titled `a-01`, `b-02`, …: each fails for the page and waits in Workbox's
 * queue, bearer token and all.
 */
async function queueInWorkbox(page: Page, context: BrowserContext, token: string, count: number) {
  await apiDown(context, true);
  const paths = ['/api/notes?list=a', '/api/notes?list=b'];
  for (let i = 1; i <= count; i++) {
    const path = paths[i % 2]!;
    const title = `${path.endsWith('a') ? 'a' : 'b'}-${String(i).padStart(2, '0')}`;
    expect(await page.evaluate(([p, t, k]) => wb.write(p!, t!, k!), [path, title, token])).toBe(
      'TypeError',
    );
  }
  await expect
    .poll(async () => (await page.evaluate(() => wb.workboxEntries())).length)
    .toBe(count);
}

test('a BackgroundSyncPlugin queue moves into the outbox on the update: 20 writes, each applied once, in order per URL, across a kill mid-import', async ({
  context,
  page,
  baseURL,
  server,
  user,
}) => {
  await openApp(page, baseURL!, '/workbox/sw-v1.js');
  const token = await page.evaluate((u) => wb.login(u), user);

  // The API is down: Workbox's plugin queues every write (the page sees the network error).
  await queueInWorkbox(page, context, token, 20);

  // The update, the API still down: the activation pass stalls after the 7th entry's row is durable,
  // before that entry leaves Workbox's queue, and the worker is stopped right there.
  const control = await WorkerControl.attach(page, new URL(baseURL!).origin);
  await page.evaluate(
    (owner) => wb.register(`/workbox/sw-v2.js?owner=${encodeURIComponent(owner)}&stall=7`),
    user,
  );
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(7);
  expect(await page.evaluate(() => wb.workboxEntries())).toHaveLength(14); // the 7th is in both
  await control.stopAll();

  // The next start finishes the move: the 7th entry is found in the outbox, not imported again.
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect.poll(async () => (await page.evaluate(() => wb.workboxEntries())).length).toBe(0);
  const rows = await page.evaluate(() => wb.outboxRows());
  expect(rows).toHaveLength(20);
  expect(new Set(rows.map((r) => titleOf(r))).size).toBe(20);
  expect(JSON.stringify(rows)).not.toContain(token); // credentials were never stored

  // The API is back: every write is applied exactly once, in order per URL.
  await apiDown(context, false);
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect.poll(async () => (await server.stats(user)).effects, { timeout: 30_000 }).toBe(20);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(0);
  const stats = await server.stats(user);
  expect(Object.keys(stats.effectsByKey).sort()).toEqual(rows.map((r) => r.id).sort());
  expect(Object.values(stats.effectsByKey).every((n) => n === 1)).toBe(true);
  const titleByKey = new Map(rows.map((r) => [r.id, titleOf(r)]));
  const firstArrival = new Map<string, number>();
  for (const request of await server.requests(user))
    if (request.key !== undefined && request.status === 201 && !firstArrival.has(request.key))
      firstArrival.set(request.key, request.seq);
  for (const list of ['a', 'b']) {
    const applied = [...firstArrival.entries()]
      .filter(([key]) => titleByKey.get(key)?.startsWith(list))
      .sort((x, y) => x[1] - y[1])
      .map(([key]) => titleByKey.get(key));
    expect(applied).toHaveLength(10);
    expect(applied).toEqual([...applied].sort());
  }
  await control.detach();
});

test('writes through OutboxPlugin: 10 % of answers lost gives no second effect, and a kill between requests loses nothing', async ({
  context,
  page,
  baseURL,
  server,
  user,
}) => {
  await openApp(page, baseURL!, `/workbox/sw-v2.js?owner=${encodeURIComponent(user)}`);
  const token = await page.evaluate((u) => wb.login(u), user);
  const control = await WorkerControl.attach(page, new URL(baseURL!).origin);

  // Online, with the server dropping 10 % of write answers after committing them.
  await server.fault({ kind: 'drop-after-commit', route: 'POST /api/notes', user, rate: 0.1 });
  const writes = 40;
  const answers: Array<number | string> = [];
  for (let i = 1; i <= writes; i++)
    answers.push(
      await page.evaluate(([t, k]) => wb.write('/api/notes', t!, k!), [`n-${i}`, token]),
    );
  await expect
    .poll(async () => (await page.evaluate(() => wb.outboxRows())).length, { timeout: 30_000 })
    .toBe(0);
  await server.clearFaults(user);
  const lossy = await server.stats(user);
  const lost = answers.filter((a) => a !== 201).length;
  const duplicates = Object.values(lossy.effectsByKey).reduce((sum, n) => sum + n - 1, 0);
  console.log(
    `measured: OutboxPlugin, ${writes} writes at 10 % answer loss: ${lost} answers lost to the page, ` +
      `${lossy.effects} effects, ${duplicates} duplicates, ${lossy.replays} replays`,
  );
  expect(lossy.effects).toBe(writes);
  expect(duplicates).toBe(0);

  // The API down: 10 writes become rows; back up, the worker is stopped while it drains them.
  await apiDown(context, true);
  for (let i = 1; i <= 10; i++)
    await page.evaluate(([t, k]) => wb.write('/api/notes', t!, k!), [`k-${i}`, token]);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(10);
  await apiDown(context, false);
  await server.fault({ kind: 'delay', ms: 150, route: 'POST /api/notes', user });
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect.poll(async () => (await server.stats(user)).effects).toBeGreaterThan(writes + 2);
  await control.stopAll();
  await server.clearFaults(user);
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect
    .poll(async () => (await server.stats(user)).effects, { timeout: 30_000 })
    .toBe(writes + 10);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(0);
  const after = await server.stats(user);
  expect(Object.values(after.effectsByKey).every((n) => n === 1)).toBe(true);
  await control.detach();
});

test('OutboxPlugin keeps a URL’s order when a request on the wire fails: the later write waits, queues behind it, and lands after it (G4)', async ({
  context,
  page,
  baseURL,
  server,
  user,
}) => {
  await openApp(page, baseURL!, `/workbox/sw-v2.js?owner=${encodeURIComponent(user)}`);
  const token = await page.evaluate((u) => wb.login(u), user);
  const control = await WorkerControl.attach(page, new URL(baseURL!).origin);

  // The first write's request is held on the wire, then cut: the server never sees it. Every
  // request that reaches the network meanwhile is noted by title (the engine retries the first).
  let arrived = 0;
  const titles: string[] = [];
  let cut!: () => void;
  const cutNow = new Promise<void>((resolve) => {
    cut = resolve;
  });
  await context.route('**/api/notes', async (route) => {
    if (route.request().method() !== 'POST') return route.fallback();
    arrived++;
    titles.push((JSON.parse(route.request().postData() ?? '{}') as { title?: string }).title ?? '');
    if (arrived > 1) return route.abort('internetdisconnected');
    await cutNow;
    await route.abort('connectionreset');
  });
  const first = page.evaluate(([k]) => wb.write('/api/notes', 'first', k!), [token]);
  await expect.poll(() => arrived).toBe(1);
  const second = page.evaluate(([k]) => wb.write('/api/notes', 'second', k!), [token]);
  // The second write reaches the worker while the first is on the wire, and waits there.
  const worker = context.serviceWorkers()[0]!;
  await expect
    .poll(() =>
      worker.evaluate(
        () => (self as unknown as { __e2e: { writesSeen?: number } }).__e2e.writesSeen,
      ),
    )
    .toBe(2);
  expect(arrived).toBe(1);
  cut();
  expect(await first).toBe('TypeError');
  expect(await second).toBe('TypeError');
  // Both are rows now, the second behind the first; the second never reached the network.
  const stored = await page.evaluate(() => wb.outboxRows());
  const rows = ['first', 'second'].map((title) => stored.find((r) => titleOf(r) === title)!);
  expect(stored).toHaveLength(2);
  expect(rows[1]!.successorOf).toBe(rows[0]!.id);
  expect(new Set(titles)).toEqual(new Set(['first']));

  // The network is back: first, then second, each once.
  await context.unroute('**/api/notes');
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect.poll(async () => (await server.stats(user)).effects, { timeout: 30_000 }).toBe(2);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(0);
  const order = (await server.requests(user))
    .filter((request) => request.status === 201)
    .sort((x, y) => x.seq - y.seq)
    .map((request) => request.key);
  expect(order).toEqual(rows.map((r) => r.id));
  await control.detach();
});

test('the switch as the guide writes it, against an API that needs a bearer token: 10 queued writes imported, held until the page’s next request hands its token over, then applied once each in order per URL, no credential stored', async ({
  context,
  page,
  baseURL,
  server,
  user,
}) => {
  await openApp(page, baseURL!, '/workbox/sw-v1.js');
  const token = await page.evaluate((u) => wb.login(u), user);

  // The API is down: BackgroundSyncPlugin queues every write, bearer token and all.
  await queueInWorkbox(page, context, token, 10);

  // The switch; the API is back. The imported rows carry no token, so none goes: they wait held.
  await page.evaluate((o) => wb.register(`/workbox/sw-v3.js?owner=${encodeURIComponent(o)}`), user);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(10);
  await apiDown(context, false);
  const control = await WorkerControl.attach(page, new URL(baseURL!).origin);
  await control.sync({ tag: 'sw-outbox', scope: '/workbox/' });
  await expect
    .poll(async () => (await page.evaluate(() => wb.outboxRows())).filter(isHeld).length)
    .toBeGreaterThan(0);
  expect((await server.stats(user)).effects).toBe(0);
  const imported = await page.evaluate(() => wb.outboxRows());
  const titleByKey = new Map(imported.map((row) => [row.id, titleOf(row)]));

  // The page writes again, as it always did: that request hands its token to the worker.
  await page.evaluate(([k]) => wb.write('/api/notes?list=a', 'a-11', k!), [token]);
  await expect.poll(async () => (await server.stats(user)).effects, { timeout: 30_000 }).toBe(11);
  await expect.poll(async () => (await page.evaluate(() => wb.outboxRows())).length).toBe(0);
  const stats = await server.stats(user);
  expect(Object.values(stats.effectsByKey).every((n) => n === 1)).toBe(true);
  const created = (await server.requests(user))
    .filter((request) => request.status === 201)
    .sort((x, y) => x.seq - y.seq);
  expect(created.every((request) => request.authorized)).toBe(true);
  // The one key the import did not make is the page's last write.
  const applied = created.map((request) => titleByKey.get(request.key ?? '') ?? 'a-11');
  for (const list of ['a', 'b']) {
    const mine = applied.filter((title) => title.startsWith(list));
    expect(mine).toEqual([...mine].sort());
  }
  expect(applied).toHaveLength(11);
  // Nothing of the token in the outbox's database, rows or meta.
  expect(JSON.stringify(await page.evaluate(() => wb.outboxDatabase()))).not.toContain(token);
  await control.detach();
});

const isHeld = (row: { state?: string }) => row.state === 'held';
