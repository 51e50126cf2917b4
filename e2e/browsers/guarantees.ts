import { expect } from '@playwright/test';
import { fromWorker, type LoggedRequest, type ReferenceServer } from '../support/server.ts';
import { expectBadInputRefused, openRacingSenders } from '../support/steps.ts';
import type { BrowserTab, Profile } from './profile.ts';

/**
 * The guarantees (SPEC §0) run in a real browser other than Chromium: Firefox ESR and WebKitGTK,
 * which have no Background Sync, no request interception and no way to stop a worker from the
 * test. Every effect is counted at the server — its effects per key and its request log, where a
 * worker's fetch names the worker script as Referer — never through the library's own word.
 * Faults are the server's: 503 bursts, 401 windows, responses dropped after commit, writes held
 * until the test releases them.
 */

/** What one scenario gets: a fresh profile, the shared server and a user of its own. */
export interface ScenarioContext {
  profile: Profile;
  server: ReferenceServer;
  user: string;
  /** Records a measured fact in the test report (Playwright annotations). */
  note(type: string, description: string): void;
}

export interface Scenario {
  name: string;
  /** Browsers that cannot run it, each with the reason (reported as a skip, never silent). */
  skip?: Partial<Record<Profile['browser'], string>>;
  run(t: ScenarioContext): Promise<void>;
}

export interface Enqueued {
  id: string;
  requestId?: string;
  outcome: string;
}

export interface View {
  id: string;
  status: string;
  row: { successorOf?: string };
}

export const keyOf = (enqueued: Enqueued) => enqueued.requestId ?? enqueued.id;
export const statuses = (requests: LoggedRequest[]) =>
  requests.map((request) => request.status ?? (request.aborted ? 'aborted' : 'open'));

/** Waits until the server has seen `count` requests with `key` (held ones included). */
export async function arrived(
  t: Pick<ScenarioContext, 'server' | 'user'>,
  key: string,
  count = 1,
): Promise<LoggedRequest[]> {
  await expect.poll(async () => (await t.server.sends(t.user, key)).length).toBe(count);
  return t.server.sends(t.user, key);
}

/** Every effect the server applied for this user, by key. */
export async function effects(
  t: Pick<ScenarioContext, 'server' | 'user'>,
): Promise<Record<string, number>> {
  return (await t.server.stats(t.user)).effectsByKey;
}

/** The server holds the next `count` writes on `route` (a minute at most) until released. */
function holdWrites(t: Pick<ScenarioContext, 'server' | 'user'>, route: string, count = 1) {
  return t.server.fault({ kind: 'delay', ms: 60_000, route, user: t.user, count });
}

function update(targetId: string, baseRevision: number | undefined, payload: object) {
  return {
    collection: 'notes',
    kind: 'update',
    targetId,
    ...(baseRevision === undefined ? {} : { baseRevision }),
    payload,
  };
}

export const GUARANTEES: Scenario[] = [
  {
    name: 'the browser offers no Background Sync and no periodic sync, so the fallbacks are what sends (SPEC §12, §21)',
    async run(t) {
      const app = await t.profile.open({ owner: t.user, login: t.user });
      const found = await app.evaluate(async () => {
        const registration = await navigator.serviceWorker.ready;
        return {
          userAgent: navigator.userAgent,
          sync: 'sync' in registration,
          periodicSync: 'periodicSync' in registration,
          push: 'pushManager' in registration,
          locks: 'locks' in navigator,
        };
      }, undefined);
      const { userAgent, ...apis } = found;
      t.note('user agent', userAgent);
      t.note('triggers', JSON.stringify(apis));
      expect(apis).toMatchObject({ sync: false, periodicSync: false });
    },
  },
  {
    name: 'edits made while the server refuses are each applied once after every page closed and the server came back (G1, G2)',
    async run(t) {
      const { server, user } = t;
      // Persisted credentials: the worker may send with no page open (SPEC §13).
      const app = await t.profile.open({ owner: user, login: { user, persist: true } });
      await server.fault({ kind: 'unavailable', route: 'write', user, retryAfter: 1 });
      const ids: string[] = [];
      for (const title of ['one', 'two', 'three']) ids.push(await app.createNote(title));
      // Each has been tried and turned away: they wait in the outbox.
      for (const id of ids) await arrived(t, id);
      await app.close();
      const closed = Date.now();
      await server.clearFaults(user);

      // With no page open, only the worker can send them: it lives on for a while after the
      // last page left, retrying on its backoff timer (Firefox about 30 s + 30 s, WebKit 10 s).
      let sentWithoutPage = true;
      try {
        await expect
          .poll(async () => Object.keys(await effects(t)).length, { timeout: 20_000 })
          .toBe(ids.length);
      } catch {
        sentWithoutPage = false;
      }
      const applied = (await server.requests(user)).filter((r) => r.status === 201);
      if (sentWithoutPage) {
        const last = Math.max(...applied.map((r) => r.at));
        t.note(
          'sent with no page open',
          `yes: the last of 3 applied ${last - closed} ms after the last page closed`,
        );
      } else {
        t.note('sent with no page open', 'no: sent when a page opened again');
        await t.profile.open({ owner: user, login: { user, persist: true } });
        await expect
          .poll(async () => Object.keys(await effects(t)).length, { timeout: 20_000 })
          .toBe(ids.length);
      }
      expect(await effects(t)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
      // Every copy of each intent carried its one key; only the worker sent them.
      const writes = (await server.requests(user)).filter((r) => r.key !== undefined);
      expect(new Set(writes.map((r) => r.key))).toEqual(new Set(ids));
      expect(writes.every(fromWorker)).toBe(true);
    },
  },
  {
    name: 'with every page closed the worker retries on its own only as long as the browser keeps it, and the next visit sends what is left, once each (G1, SPEC §21)',
    async run(t) {
      const { server, user } = t;
      const app = await t.profile.open({ owner: user, login: { user, persist: true } });
      // The server refuses every write with `Retry-After: 1`: the worker retries about every
      // second while it lives.
      await server.fault({ kind: 'unavailable', route: 'write', user, retryAfter: 1 });
      const ids = [await app.createNote('kept one'), await app.createNote('kept two')];
      for (const id of ids) await arrived(t, id);
      await app.close();
      const closed = Date.now();

      // The worker's attempts stop when the browser stops it (nothing else wakes it here).
      const lastAttempt = async () =>
        Math.max(...(await server.requests(user)).filter(fromWorker).map((r) => r.at));
      await expect
        .poll(async () => Date.now() - (await lastAttempt()) > 6000, {
          timeout: 120_000,
          intervals: [1000],
        })
        .toBe(true);
      const lived = (await lastAttempt()) - closed;
      t.note('worker retried after the last page closed', `${lived} ms`);
      expect(lived).toBeGreaterThan(5000);
      expect(await effects(t)).toEqual({});

      await server.clearFaults(user);
      const again = await t.profile.open({ owner: user, login: { user, persist: true } });
      await expect
        .poll(async () => Object.keys(await effects(t)).length, { timeout: 20_000 })
        .toBe(ids.length);
      await again.flushUntilEmpty();
      expect(await effects(t)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    },
  },
  {
    name: 'a response lost after commit is resent with the same key and bytes, and the server applies it once (G2)',
    async run(t) {
      const { server, user } = t;
      const app = await t.profile.open({ owner: user, login: user });
      await server.fault({ kind: 'drop-after-commit', route: 'POST /api/notes', user, count: 1 });
      const id = await app.createNote('once');
      await expect
        .poll(async () => statuses(await server.sends(user, id)).includes(201))
        .toBe(true);
      const sends = await server.sends(user, id);
      expect(sends.length).toBeGreaterThanOrEqual(2);
      expect(statuses(sends)[0]).toBe('aborted');
      expect(new Set(sends.map((r) => r.digest)).size).toBe(1);
      const stats = await server.stats(user);
      expect(stats.effectsByKey).toEqual({ [id]: 1 });
      expect(stats.replays).toBeGreaterThanOrEqual(1);
      expect(await server.notes(user)).toHaveLength(1);
    },
  },
  {
    name: 'an update made while another is in flight waits for its answer, and the two reach the server in order (G4)',
    async run(t) {
      const { server, user } = t;
      const note = await server.createNote(user, 'start', `seed-${user}`);
      const app = await t.profile.open({ owner: user, login: user, sw: { lease: '20000' } });
      await holdWrites(t, 'PATCH /api/notes/:id');
      const first = await app.value<Enqueued>(
        'enqueue',
        update(note.id, note.revision, { title: 'a1' }),
      );
      expect(first.outcome).toBe('queued');
      await arrived(t, keyOf(first));

      const second = await app.value<Enqueued>(
        'enqueue',
        update(note.id, note.revision, { title: 'b1' }),
      );
      expect(second.outcome).toBe('successor');
      // Nothing but the first has gone out while it is in flight.
      expect((await server.requests(user)).filter((r) => r.method === 'PATCH')).toHaveLength(1);

      expect(await server.release(user)).toBe(1);
      await expect
        .poll(async () => (await server.note(user, note.id))?.title, { timeout: 20_000 })
        .toBe('b1');
      const patches = (await server.requests(user)).filter((r) => r.method === 'PATCH');
      expect(patches.map((r) => r.key)).toEqual([keyOf(first), keyOf(second)]);
      expect(patches[1]!.at).toBeGreaterThanOrEqual(patches[0]!.endedAt!);
      expect(await server.note(user, note.id)).toMatchObject({ title: 'b1', revision: 3 });
      expect(await effects(t)).toEqual({
        [`seed-${user}`]: 1,
        [keyOf(first)]: 1,
        [keyOf(second)]: 1,
      });
    },
  },
  {
    name: 'an edit of a create still in flight is sent as an update of the server id once the create has its receipt (SPEC §8)',
    async run(t) {
      const { server, user } = t;
      const app = await t.profile.open({ owner: user, login: user, sw: { lease: '20000' } });
      await holdWrites(t, 'POST /api/notes');
      const create = await app.value<Enqueued & { targetId: string }>('enqueue', {
        collection: 'notes',
        kind: 'create',
        payload: { title: 'draft' },
      });
      expect(create.targetId).toBe(`pending:${create.id}`);
      await arrived(t, create.id);

      const edit = await app.value<Enqueued>(
        'enqueue',
        update(create.targetId, undefined, { title: 'final' }),
      );
      expect(edit.outcome).toBe('intent');
      expect(await server.release(user)).toBe(1);

      await expect
        .poll(async () => (await server.notes(user))[0]?.revision, { timeout: 20_000 })
        .toBe(2);
      const [note] = await server.notes(user);
      expect(note).toMatchObject({ title: 'final', revision: 2 });
      const writes = (await server.requests(user)).filter((r) => r.key !== undefined);
      expect(writes.map((r) => `${r.method} ${r.path}`)).toEqual([
        'POST /api/notes',
        `PATCH /api/notes/${note!.id}`,
      ]);
      expect(writes[0]!.key).toBe(create.id);
      expect(Object.values(await effects(t))).toEqual([1, 1]);
    },
  },
  {
    name: 'a revision conflict is resent from a successor stored before it is sent: two keys, one effect, one ledger entry (G5)',
    async run(t) {
      const { server, user } = t;
      const note = await server.createNote(user, 'base', `seed-${user}`);
      await server.editElsewhere(user, note.id, 'theirs');
      const app = await t.profile.open({ owner: user, login: user, sw: { lease: '20000' } });
      // The original and then its resend are each held until released.
      await holdWrites(t, 'PATCH /api/notes/:id', 2);
      const original = await app.value<Enqueued>(
        'enqueue',
        update(note.id, note.revision, { body: 'mine' }),
      );
      await arrived(t, keyOf(original));
      expect(await server.release(user)).toBe(1);

      // The 412 came back; the resend is at the server, under a key of its own.
      const resend = async () =>
        (await server.requests(user)).find(
          (r) => r.method === 'PATCH' && r.key !== keyOf(original),
        );
      await expect.poll(async () => (await resend())?.key).toBeTruthy();
      const successorKey = (await resend())!.key!;
      expect(statuses(await server.sends(user, keyOf(original)))).toEqual([412]);
      // G5: the successor row was in IndexedDB before its request reached the server.
      expect(await app.storedRow(successorKey)).toMatchObject({
        successorOf: original.id,
        baseRevision: 2,
      });
      expect((await effects(t))[successorKey]).toBeUndefined();

      // Its answer is lost after commit: the same key again, answered from the ledger.
      await server.fault({
        kind: 'drop-after-commit',
        route: 'PATCH /api/notes/:id',
        user,
        count: 1,
      });
      expect(await server.release(user)).toBe(1);
      await expect
        .poll(async () => statuses(await server.sends(user, successorKey)), { timeout: 20_000 })
        .toEqual(['aborted', 200]);
      expect(await server.note(user, note.id)).toMatchObject({ body: 'mine', revision: 3 });
      expect(await effects(t)).toEqual({ [`seed-${user}`]: 1, [successorKey]: 1 });
      const keys = new Set(
        (await server.requests(user)).filter((r) => r.method === 'PATCH').map((r) => r.key),
      );
      expect(keys).toEqual(new Set([keyOf(original), successorKey]));
      await expect.poll(async () => (await app.value<unknown[]>('conflicts')).length).toBe(1);
    },
  },
  {
    name: 'bad input gets a typed error on the page and the worker keeps serving (G7)',
    async run(t) {
      const { server, user } = t;
      const app = await t.profile.open({ owner: user, login: user });
      const { id } = await expectBadInputRefused(app, server, user);
      expect(
        (await server.requests(user)).filter((r) => r.key !== undefined).map((r) => r.key),
      ).toEqual([id]);
    },
  },
  {
    name: 'a 401 holds the row until the app signs in again and resumes it, then it is sent once (SPEC §13)',
    async run(t) {
      const { server, user } = t;
      const app = await t.profile.open({ owner: user, login: user });
      await server.expireToken(user);
      const id = await app.createNote('after login');
      await arrived(t, id);
      await expect
        .poll(async () => (await app.value<View | undefined>('row', id))?.status)
        .toBe('held');
      // Held, not retried: the one request so far is the one the server turned away.
      expect(statuses(await server.sends(user, id))).toEqual([401]);

      expect((await app.login(user)).ok).toBe(true);
      expect(await app.value('resumeHeld')).toBe(1);
      await expect.poll(async () => (await effects(t))[id]).toBe(1);
      expect(statuses(await server.sends(user, id))).toEqual([401, 201]);
    },
  },
  {
    name: 'a worker and a page sender flushing the same rows at once send no key twice (G2)',
    async run(t) {
      const { server, user } = t;
      const count = 10;
      // Every first attempt is turned away with a long Retry-After, so all rows wait...
      const { worker, tab } = await openRacingSenders(
        (p) => t.profile.open(p),
        server,
        user,
        count,
      );
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push(await tab.createNote(`n${i}`));
      for (const id of ids) await arrived(t, id);

      // ...then both holders are told to flush them now, at the same moment.
      const flushNow = (holder: BrowserTab) =>
        holder.evaluate(() => {
          const page = (globalThis as unknown as { e2e: { call(m: string, o: object): unknown } })
            .e2e;
          void page.call('flush', { force: true });
        }, undefined);
      await Promise.all([flushNow(worker), flushNow(tab)]);
      await expect
        .poll(async () => Object.keys(await effects(t)).length, { timeout: 20_000 })
        .toBe(count);
      expect(Object.values(await effects(t)).every((n) => n === 1)).toBe(true);
      // Each key: the one turned-away attempt and the one that went through, never more.
      for (const id of ids) expect(statuses(await server.sends(user, id))).toEqual([503, 201]);
      const senders = (await server.requests(user)).filter((r) => r.status === 201).map(fromWorker);
      t.note(
        'racing senders',
        `${senders.filter(Boolean).length} sent by the worker, ${senders.filter((w) => !w).length} by the page sender`,
      );
    },
  },
  {
    name: 'a page outside the worker’s scope sends through the page sender, and a page the worker controls does not send it again (SPEC §12)',
    async run(t) {
      const { server, user } = t;
      const params = { owner: user, login: user, pageSender: true };
      const outside = await t.profile.open({ ...params, path: '/outside/' });
      expect(await outside.mode()).toBe('page');
      const first = await outside.createNote('from outside');
      await expect.poll(async () => (await effects(t))[first]).toBe(1);

      const app = await t.profile.open(params);
      await expect.poll(() => app.mode()).toBe('worker');
      const second = await app.createNote('controlled');
      await expect.poll(async () => (await effects(t))[second]).toBe(1);
      await app.flushUntilEmpty();
      await outside.flushUntilEmpty();

      const requests = (await server.requests(user)).filter((r) => r.key !== undefined);
      expect(requests.map((r) => [r.key, fromWorker(r) ? 'worker' : 'page', r.status])).toEqual([
        [first, 'page', 201],
        [second, 'worker', 201],
      ]);
    },
  },
  {
    name: 'a hard-reloaded page sends through the page sender, and nothing is sent twice once the worker controls the page again (SPEC §12)',
    skip: {
      webkit:
        'WebKitGTK offers no hard reload here: it ignores location.reload(true)’s forceGet (the page comes back controlled), and WebDriver’s refresh is a plain reload',
    },
    async run(t) {
      const { server, user } = t;
      const params = { owner: user, login: user, pageSender: true };
      const app = await t.profile.open(params);
      await expect.poll(() => app.mode()).toBe('worker');
      const first = await app.createNote('controlled');
      await expect.poll(async () => (await effects(t))[first]).toBe(1);

      // Ctrl+Shift+R: the document is not controlled, so the page sender runs in it.
      await app.reload(params, { hard: true });
      expect(await app.controlled()).toBe(false);
      expect(await app.mode()).toBe('page');
      const second = await app.createNote('after a hard reload');
      await expect.poll(async () => (await effects(t))[second]).toBe(1);

      // A plain reload: the worker controls the page again and sends.
      await app.reload(params, { hard: false });
      await expect.poll(() => app.mode()).toBe('worker');
      const third = await app.createNote('controlled again');
      await expect.poll(async () => (await effects(t))[third]).toBe(1);
      await app.flushUntilEmpty();

      const requests = (await server.requests(user)).filter((r) => r.key !== undefined);
      expect(requests.map((r) => [r.key, fromWorker(r) ? 'worker' : 'page', r.status])).toEqual([
        [first, 'worker', 201],
        [second, 'page', 201],
        [third, 'worker', 201],
      ]);
    },
  },
];
