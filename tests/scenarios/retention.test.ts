import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type RunningServer } from '../../server/index.ts';
import { createRetentionBook } from '../../shared/core/retention-book.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { createCredentials, handOverCredentials } from '../../shared/runtime/credentials.ts';
import { type AuthSource, createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { Api, startTestServer } from '../server/helpers.ts';
import { type Holder, LEASE, STORE_KINDS, World } from '../support/harness.ts';
import { createNote, deleteNote, updateNote } from '../support/intents.ts';

/**
 * SPEC §15 "A key is only safe while the server remembers it" and §13 "Sign-out holds", against
 * the real reference server over HTTP with the real fetch transport, on both stores. The clock is
 * one port shared by the server and the client: a week passes by moving it.
 */

const DAY = 24 * 60 * 60 * 1000;
const A = 'alice';
const B = 'bob';

interface Rig {
  world: World;
  server: RunningServer;
  /** Every request that reached the server's door: method, path, Authorization. */
  wire: { method: string; path: string; auth: string | null }[];
  tokens: Map<string, string>;
  /** Where the transport gets credentials; by default the tokens of {@link Rig.login}. */
  auth: AuthSource;
  /** Logs `user` in again (a token expires within a day of the server's clock). */
  login(user: string): Promise<Api>;
  holder(owner: string, options?: { store?: (store: OutboxStore) => OutboxStore }): Promise<Holder>;
}

let rig: Rig | undefined;
afterEach(async () => {
  rig?.world.close();
  await rig?.server.close();
  rig = undefined;
});

async function setUp(kind: (typeof STORE_KINDS)[number], retentionMs = 7 * DAY): Promise<Rig> {
  const world = await World.create(kind);
  const server = await startTestServer({
    store: openSqliteStore({ path: ':memory:' }),
    now: () => world.clock.now(),
    retentionMs,
  });
  const wire: Rig['wire'] = [];
  const tokens = new Map<string, string>();
  const login = async (user: string) => {
    const api = await Api.login(server.url, user);
    tokens.set(user, api.token);
    return api;
  };
  const recordingFetch: typeof fetch = (input, init) => {
    const url = new URL(typeof input === 'string' ? input : (input as Request).url);
    const headers = new Headers(init?.headers);
    wire.push({
      method: init?.method ?? 'GET',
      path: url.pathname,
      auth: headers.get('authorization'),
    });
    return fetch(input, init);
  };
  const transport = createFetchTransport({
    auth: (owner) => rig!.auth(owner),
    allowedOrigins: [server.url],
    baseUrl: `${server.url}/sw.js`,
    timeoutMs: LEASE,
    clock: world.clock,
    fetch: recordingFetch,
  });
  const handlers = { notes: restHandler({ baseUrl: '/api/notes' }) };
  rig = {
    world,
    server,
    wire,
    tokens,
    auth: async (owner) => {
      const token = tokens.get(owner);
      return token === undefined ? null : { authorization: `Bearer ${token}` };
    },
    login,
    // A new holder id each time: a restarted worker is a new holder (§4).
    holder: (owner) =>
      world.holder(`h-${owner}-${world.holders.length}`, { owner, transport, handlers }),
  };
  return rig;
}

/** Loses the answer of the next write on `route` for `user`, after the server committed it. */
async function loseNextAnswer(server: RunningServer, route: string, user: string): Promise<void> {
  const answer = await fetch(`${server.url}/__faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'drop-after-commit', route, user, count: 1 }),
  });
  expect(answer.status).toBeLessThan(300);
}

async function notesOf(api: Api) {
  return (await api.get('/api/notes')).json.items as {
    id: string;
    revision: number;
    title: string;
  }[];
}

describe.each(STORE_KINDS)(
  'a key older than the server remembers, on the %s store (SPEC §15)',
  (kind) => {
    it('a create whose 201 was lost, eight days later: blocked retention_exceeded, one note, its evidence kept', async () => {
      const { world, server, wire, login, holder } = await setUp(kind);
      await login(A);
      const alice = await holder(A);
      const { id } = await alice.api.enqueue(createNote({ title: 'once' }));
      await loseNextAnswer(server, 'POST /api/notes', A);
      await alice.api.flush();
      const lost = await world.row(id);
      expect(lost).toMatchObject({ state: 'queued', evidence: { mayHaveApplied: true } });
      expect(lost?.evidence?.firstAttemptAt).toBe(world.clock.now());

      world.clock.advance(8 * DAY);
      expect(await server.sweeper.sweep()).toBeGreaterThan(0);
      const api = await login(A);
      const before = wire.length;
      await alice.api.flush({ force: true });

      const blocked = await world.row(id);
      expect(blocked).toMatchObject({
        state: 'blocked',
        blockedCode: 'retention_exceeded',
        evidence: { mayHaveApplied: true, attemptCount: 2 },
      });
      expect(blocked?.request?.requestId).toBe(lost?.request?.requestId);
      // The receipt lookup was asked; the create was not sent again.
      expect(wire.slice(before).map((w) => `${w.method} ${w.path.replace(/[^/]+$/, '*')}`)).toEqual(
        ['GET /idempotency/*'],
      );
      expect(await notesOf(api)).toHaveLength(1);

      // The app looked and decides: discard drops it, and nothing more reaches the server.
      await alice.api.discard(id);
      expect(await world.row(id)).toBeUndefined();
      expect(await notesOf(api)).toHaveLength(1);
    });

    it('an update whose 200 was lost, eight days later: blocked, one effect, no conflict-ledger entry for its own write', async () => {
      const { world, server, wire, login, holder } = await setUp(kind);
      const api0 = await login(A);
      const created = await api0.create('first');
      const noteId = created.json.id as string;
      const alice = await holder(A);
      const { id } = await alice.api.enqueue(updateNote(noteId, { title: 'second' }, 1));
      await loseNextAnswer(server, 'PATCH /api/notes/:id', A);
      await alice.api.flush();
      expect(await world.row(id)).toMatchObject({
        state: 'queued',
        evidence: { mayHaveApplied: true },
      });

      world.clock.advance(8 * DAY);
      await server.sweeper.sweep();
      const api = await login(A);
      const before = wire.length;
      await alice.api.flush({ force: true });

      expect(await world.row(id)).toMatchObject({
        state: 'blocked',
        blockedCode: 'retention_exceeded',
      });
      expect(wire.slice(before).every((w) => w.method === 'GET')).toBe(true);
      const [note] = await notesOf(api);
      expect(note).toMatchObject({ revision: 2, title: 'second' });
      expect(await alice.api.conflicts()).toEqual([]);

      // retry is a new request through the revision check: the 412 it meets is what the server
      // really answered, and the conflict rule records that, once.
      await alice.api.retry(id);
      const reissued = await world.row(id);
      expect(reissued?.request?.requestId).not.toBe(undefined);
      await alice.api.flush({ force: true });
      expect(await world.rows(A)).toEqual([]);
      const ledger = await alice.api.conflicts();
      expect(ledger).toHaveLength(1);
      expect(ledger[0]).toMatchObject({ overwrittenRevision: 2, finalRevision: 3 });
    });

    it('G2: a create re-issued past retention is never cancelled by a delete: its old key may have been applied', async () => {
      const { world, server, wire, login, holder } = await setUp(kind);
      await login(A);
      const alice = await holder(A);
      const created = await alice.api.enqueue(createNote({ title: 'maybe there' }));
      await loseNextAnswer(server, 'POST /api/notes', A);
      await alice.api.flush();
      world.clock.advance(8 * DAY);
      await server.sweeper.sweep();
      const api = await login(A);
      await alice.api.flush({ force: true });
      expect(await world.row(created.id)).toMatchObject({ blockedCode: 'retention_exceeded' });
      await alice.api.retry(created.id);
      // The app deletes the note it made: the create may exist on the server, so the delete
      // waits on it as an intent instead of cancelling both.
      const removed = await alice.api.enqueue(deleteNote(created.targetId));
      expect(removed.outcome).toBe('intent');
      await alice.api.flush({ force: true });
      await alice.api.flush({ force: true });
      expect(await world.rows(A)).toEqual([]);
      // The re-issued create went, and the delete after it: cancelling both would have left the
      // note the old key may have made with nothing ever sent to remove it. That first note is
      // the app's to find (its key is forgotten); the one this outbox made is gone.
      expect(wire.filter((w) => w.method === 'DELETE')).toHaveLength(1);
      expect((await notesOf(api)).length).toBeLessThanOrEqual(1);
    });

    it('a lost 201 whose key the server still remembers: settled as applied from the lookup, never resent', async () => {
      const { world, server, wire, login, holder } = await setUp(kind);
      await login(A);
      const alice = await holder(A);
      const { id } = await alice.api.enqueue(createNote({ title: 'kept' }));
      await loseNextAnswer(server, 'POST /api/notes', A);
      await alice.api.flush();

      // Nothing was published to this client (the answer was lost): six days are assumed, the
      // server's own week has not passed, so its ledger still knows the key.
      world.clock.advance(6 * DAY + 1);
      const api = await login(A);
      const before = wire.length;
      await alice.api.flush({ force: true });

      expect(await world.row(id)).toBeUndefined();
      const [receipt] = await alice.api.receipts();
      expect(receipt).toMatchObject({ rowId: id, status: 201, revision: 1 });
      expect(wire.slice(before).map((w) => w.method)).toEqual(['GET']);
      expect(await notesOf(api)).toHaveLength(1);
    });

    it('a restarted worker reads the retention kept in meta: a key eight days old goes again where the server keeps 30 days, and is replayed', async () => {
      const { world, server, wire, login, holder } = await setUp(kind, 30 * DAY);
      await login(A);
      const before = await holder(A);
      await before.api.enqueue(createNote({ title: 'teaches the retention' }));
      await before.api.flush();
      const { id } = await before.api.enqueue(createNote({ title: 'lost answer' }));
      await loseNextAnswer(server, 'POST /api/notes', A);
      await before.api.flush();

      world.clock.advance(8 * DAY);
      await server.sweeper.sweep();
      const api = await login(A);
      // A new core on the same database: it knows nothing but what `meta` kept.
      const restarted = await holder(A);
      const sent = wire.length;
      await restarted.api.flush({ force: true });
      expect(await world.row(id)).toBeUndefined();
      expect(wire.slice(sent).map((w) => `${w.method} ${w.path}`)).toEqual(['POST /api/notes']);
      expect(await notesOf(api)).toHaveLength(2);
    });

    it('learns the retention from the answers it gets and keeps it in meta for a restarted worker', async () => {
      const { login, holder } = await setUp(kind, 30 * DAY);
      await login(A);
      const alice = await holder(A);
      await alice.api.enqueue(createNote({ title: 'x' }));
      await alice.api.flush();
      // Keyed by the request's origin; the handler's relative URLs are the sender's own (`''`).
      expect(await alice.store.getMeta('retention')).toEqual({ '': 30 * DAY });
      const restarted = createRetentionBook(alice.store);
      await restarted.load();
      expect(restarted.get('')).toBe(30 * DAY);
    });
  },
);

describe.each(STORE_KINDS)(
  'the conflict ledger and the server’s history, on the %s store (SPEC §10.1, §15)',
  (kind) => {
    it('an entry says when the server forgets what it overwrote; past that restore answers history_unavailable', async () => {
      const { world, server, login, holder } = await setUp(kind);
      const api = await login(A);
      const note = (await api.create('mine')).json.id as string;
      await api.patch(note, 1, { title: 'theirs' });
      const alice = await holder(A);
      await alice.api.enqueue(updateNote(note, { title: 'mine again' }, 1));
      await alice.api.flush();
      const [entry] = await alice.api.conflicts();
      expect(entry).toMatchObject({
        overwrittenRevision: 2,
        historyExpiresAt: entry!.recordedAt + 7 * DAY,
        historyExpired: false,
      });

      world.clock.advance(8 * DAY);
      await server.sweeper.sweep();
      await login(A);
      expect((await alice.api.conflicts())[0]).toMatchObject({ historyExpired: true });
      await expect(alice.api.restore(entry!.successorId)).rejects.toMatchObject({
        code: 'history_unavailable',
      });
    });
  },
);

describe.each(STORE_KINDS)(
  'sign-out holds, never downgrades, on the %s store (SPEC §13)',
  (kind) => {
    it('a signed-out owner’s row waits held while another signs in with a cookie session, then goes once under its own credentials', async () => {
      const r = await setUp(kind);
      const { world, wire } = r;
      const alice = await r.holder(A);
      const credentials = createCredentials(async () => alice.store);
      // The transport reads only what the pages handed over, as a worker's does.
      r.auth = credentials.source;
      const first = await Api.login(r.server.url, A);
      await credentials.set(A, { authorization: `Bearer ${first.token}` });
      const { id } = await alice.api.enqueue(createNote({ title: 'alice only' }));

      // Alice signs out before it went; Bob signs in on the same device with a cookie session.
      await handOverCredentials(credentials, alice.core.forOwner(A), A, null);
      await handOverCredentials(credentials, alice.core.forOwner(B), B, {});
      await alice.api.flush({ force: true });
      expect(await world.row(id)).toMatchObject({
        state: 'held',
        evidence: { lastErrorCode: 'auth_required' },
      });
      expect(wire).toEqual([]);

      // Alice signs in again: the row goes once, with her token.
      const again = await Api.login(r.server.url, A);
      const resumed = await handOverCredentials(credentials, alice.core.forOwner(A), A, {
        authorization: `Bearer ${again.token}`,
      });
      expect(resumed).toBe(1);
      await alice.api.flush();
      await world.until(async () => (await world.row(id)) === undefined, 'the row settled');
      expect(wire).toEqual([{ method: 'POST', path: '/api/notes', auth: `Bearer ${again.token}` }]);
      expect(await notesOf(again)).toHaveLength(1);
      expect(await notesOf(await Api.login(r.server.url, B))).toEqual([]);
    });
  },
);
