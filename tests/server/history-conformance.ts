import { describe, expect, it } from 'vitest';
import type { ServerStore, WriteCommand } from '../../server/index.ts';
import { Api, newKey, newUser } from './helpers.ts';

const NOW = 1_700_000_000_000;

/** Makes the ledger insert of one key fail inside its transaction; resolves to the undo. */
export type FailLedgerInsert = (key: string) => Promise<() => Promise<void>>;

function command(principal: string, fields: Partial<WriteCommand>): WriteCommand {
  return { principal, key: newKey(), fingerprint: 'f', now: NOW, ...fields } as WriteCommand;
}

/**
 * What a conflict overwrote stays recoverable (SPEC §10.1), on every adapter: each superseded
 * version is kept in the transaction of the write that superseded it, a 412 names the version a
 * resend would overwrite, `GET /api/notes/:id/history/:revision` serves it to its owner only,
 * and the history expires with the ledger.
 */
export function defineHistoryConformance(
  url: () => string,
  getStore: () => ServerStore,
  failLedgerInsert: FailLedgerInsert | undefined,
): void {
  describe('record history', () => {
    it('names the version a resend would overwrite in the 412 and serves it once superseded', async () => {
      const api = await Api.login(url(), newUser());
      const created = await api.create('draft');
      const id = created.json.id as string;
      await api.patch(id, 1, { body: 'theirs' });
      const stale = await api.patch(id, 1, { body: 'mine' });
      expect(stale.status).toBe(412);
      const href = `/api/notes/${id}/history/2`;
      expect(stale.json.history).toEqual({ revision: 2, href });
      // Before the resend the link shows the current version, superseded by nothing yet.
      const before = await api.get(href);
      expect(before.status).toBe(200);
      expect(before.json).toEqual({
        id,
        revision: 2,
        value: { title: 'draft', body: 'theirs' },
        supersededBy: null,
        supersededAt: null,
      });
      const key = newKey();
      expect((await api.patch(id, 2, { body: 'mine' }, { key })).status).toBe(200);
      const after = await api.get(href);
      expect(after.json).toEqual({
        id,
        revision: 2,
        value: { title: 'draft', body: 'theirs' },
        supersededBy: key,
        supersededAt: expect.any(Number),
      });
      expect((await api.get(`/api/notes/${id}/history/1`)).json).toMatchObject({
        revision: 1,
        value: { title: 'draft', body: '' },
      });
      expect((await api.get(`/api/notes/${id}/history/3`)).json).toMatchObject({
        revision: 3,
        value: { body: 'mine' },
        supersededBy: null,
      });
      expect((await api.get(`/api/notes/${id}/history/4`)).status).toBe(404);
    });

    it('serves a version to its owner only; everyone else gets a 404 problem', async () => {
      const owner = await Api.login(url(), newUser());
      const created = await owner.create('private');
      const id = created.json.id as string;
      await owner.patch(id, 1, { body: 'secret' });
      const stranger = await Api.login(url(), newUser());
      for (const answer of [
        await stranger.get(`/api/notes/${id}/history/1`),
        await stranger.get(`/api/notes/${id}/history/2`),
        await owner.get('/api/notes/note-missing/history/1'),
        await owner.get(`/api/notes/${id}/history/0`),
      ]) {
        expect(answer.status).toBe(404);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(answer.json.type).toBe('not-found');
      }
      const unsigned = await owner.get(`/api/notes/${id}/history/1`, 'not-a-token');
      expect(unsigned.status).toBe(401);
      for (const revision of ['x', '-1', '99999999999', '1.5']) {
        const answer = await owner.get(`/api/notes/${id}/history/${revision}`);
        expect([answer.status, answer.json.type]).toEqual([422, 'validation-failed']);
      }
      expect((await owner.get(`/api/notes/${id}/history/1`)).status).toBe(200);
    });

    it('keeps the last version of a deleted note, and the version another device replaced', async () => {
      const store = getStore();
      const principal = newUser();
      const id = newKey('note');
      await store.write(command(principal, { op: 'create', id, title: 't', body: 'one' }));
      await store.editNote(principal, id, { body: 'two' }, NOW + 1);
      const key = newKey();
      const removed = await store.write(command(principal, { op: 'delete', id, ifMatch: 2, key }));
      expect(removed.kind).toBe('applied');
      expect(await store.getVersion(principal, id, 1)).toEqual({
        id,
        revision: 1,
        title: 't',
        body: 'one',
        supersededBy: null,
        supersededAt: NOW + 1,
      });
      expect(await store.getVersion(principal, id, 2)).toEqual({
        id,
        revision: 2,
        title: 't',
        body: 'two',
        supersededBy: key,
        supersededAt: NOW,
      });
      expect(await store.getVersion(principal, id, 3)).toBeUndefined();
      expect(await store.getVersion(newUser(), id, 1)).toBeUndefined();
    });

    it.skipIf(failLedgerInsert === undefined)(
      'writes a version only with the write that supersedes it: a write failing inside its transaction leaves none',
      async () => {
        const store = getStore();
        const principal = newUser();
        const id = newKey('note');
        await store.write(command(principal, { op: 'create', id, title: 't', body: 'one' }));
        for (const op of ['update', 'delete'] as const) {
          const key = newKey();
          const write =
            op === 'update'
              ? command(principal, { op, id, ifMatch: 1, key, patch: { body: 'two' } })
              : command(principal, { op, id, ifMatch: 1, key });
          const undo = await failLedgerInsert!(key);
          try {
            await expect(store.write(write)).rejects.toThrow();
          } finally {
            await undo();
          }
          expect(await store.getVersion(principal, id, 1)).toBeUndefined();
          expect(await store.getNote(principal, id)).toMatchObject({ revision: 1, body: 'one' });
          expect(await store.lookup(principal, key)).toBeUndefined();
        }
        const key = newKey();
        const retried = command(principal, {
          op: 'update',
          id,
          ifMatch: 1,
          key,
          patch: { body: 'two' },
        });
        expect((await store.write(retried)).kind).toBe('applied');
        expect(await store.getVersion(principal, id, 1)).toMatchObject({ supersededBy: key });
      },
    );

    it('keeps one version when racing writes supersede the same revision: the one that applied', async () => {
      const store = getStore();
      const principal = newUser();
      const id = newKey('note');
      await store.write(command(principal, { op: 'create', id, title: 't', body: 'one' }));
      const writes = Array.from({ length: 12 }, (_, i) =>
        command(principal, { op: 'update', id, ifMatch: 1, patch: { body: `copy ${i}` } }),
      );
      const outcomes = await Promise.all(writes.map((write) => store.write(write)));
      const applied = outcomes.flatMap((outcome, i) =>
        outcome.kind === 'applied' ? [writes[i]!] : [],
      );
      expect(applied).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome.kind === 'conflict')).toHaveLength(11);
      expect(await store.getVersion(principal, id, 1)).toEqual({
        id,
        revision: 1,
        title: 't',
        body: 'one',
        supersededBy: applied[0]!.key,
        supersededAt: NOW,
      });
      expect(await store.getVersion(principal, id, 2)).toBeUndefined();
      expect(await store.summary(principal)).toMatchObject({ revisionSum: 2, receipts: 2 });
    });

    it('expires history with the ledger: the sweep takes versions superseded before the cutoff and keeps the rest', async () => {
      const store = getStore();
      const principal = newUser();
      const id = newKey('note');
      const at = (now: number, fields: Partial<WriteCommand>) =>
        store.write(command(principal, { now, id, ...fields }));
      await at(100, { op: 'create', title: 't', body: 'r1' });
      await at(200, { op: 'update', ifMatch: 1, patch: { body: 'r2' } });
      await at(300, { op: 'update', ifMatch: 2, patch: { body: 'r3' } });
      await at(NOW, { op: 'update', ifMatch: 3, patch: { body: 'r4' } });
      let swept = 0;
      for (let deleted = -1; deleted !== 0; ) {
        deleted = await store.sweepExpired(1_000, 2);
        swept += deleted;
      }
      // Three ledger entries (create and two updates before the cutoff) and two versions.
      expect(swept).toBe(5);
      expect(await store.getVersion(principal, id, 1)).toBeUndefined();
      expect(await store.getVersion(principal, id, 2)).toBeUndefined();
      expect(await store.getVersion(principal, id, 3)).toMatchObject({ body: 'r3' });
      expect(await store.getNote(principal, id)).toMatchObject({ revision: 4, body: 'r4' });
    });
  });
}
