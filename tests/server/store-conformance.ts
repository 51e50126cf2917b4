import { describe, expect, it } from 'vitest';
import type { ServerStore, WriteCommand, WriteOutcome } from '../../server/index.ts';
import { newKey, newUser } from './helpers.ts';

const NOW = 1_700_000_000_000;

function create(principal: string, overrides: Partial<WriteCommand> = {}): WriteCommand {
  return {
    op: 'create',
    principal,
    key: newKey(),
    fingerprint: 'POST /api/notes\n\nsha-256=:x:',
    now: NOW,
    id: newKey('note'),
    title: 'title',
    body: 'body',
    ...overrides,
  } as WriteCommand;
}

/**
 * A batch's writes as the kit runs them (server/kit/batch.ts): submitted together on a ledger
 * that keeps their order (SQLite's: one connection, one commit), one after another otherwise.
 */
async function writeMany(
  store: ServerStore,
  commands: readonly WriteCommand[],
): Promise<Array<PromiseSettledResult<WriteOutcome>>> {
  if (store.ledger.ordered) return Promise.allSettled(commands.map((c) => store.write(c)));
  const results: Array<PromiseSettledResult<WriteOutcome>> = [];
  for (const command of commands)
    results.push(...(await Promise.allSettled([store.write(command)])));
  return results;
}

/** The storage port's own contract (server/store/port.ts), shared by every adapter. */
export function defineStoreConformance(getStore: () => ServerStore): void {
  describe('storage port', () => {
    it('keeps nothing of a write that fails inside its transaction, so the key works later', async () => {
      const store = getStore();
      const principal = newUser();
      const first = await store.write(create(principal));
      const key = newKey();
      const clash = create(principal, {
        key,
        id: (first as { response: { body: string } }).response.body.slice(7, 36),
      });
      await expect(store.write(clash)).rejects.toThrow();
      expect(await store.lookup(principal, key)).toBeUndefined();
      const retried = await store.write(create(principal, { key }));
      expect(retried.kind).toBe('applied');
      expect((await store.summary(principal)).notes).toBe(2);
    });

    it('lets exactly one of twenty racing copies of a key write; the rest find it completed', async () => {
      const store = getStore();
      const principal = newUser();
      const key = newKey();
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, () => store.write(create(principal, { key }))),
      );
      const applied = outcomes.filter((outcome) => outcome.kind === 'applied');
      expect(applied).toHaveLength(1);
      const response = (applied[0] as { response: unknown }).response;
      for (const outcome of outcomes) expect(outcome).toMatchObject({ response });
      expect(await store.lookup(principal, key)).toEqual(response);
      expect(await store.summary(principal)).toEqual({
        notes: 1,
        deleted: 0,
        revisionSum: 1,
        receipts: 1,
      });
    });

    it('compares and sets revisions: conflict with the current copy, not-found when missing or deleted', async () => {
      const store = getStore();
      const principal = newUser();
      const id = newKey('note');
      await store.write(create(principal, { id }));
      const base = { principal, fingerprint: 'f', now: NOW };
      const stale = await store.write({
        ...base,
        op: 'update',
        key: newKey(),
        id,
        ifMatch: 7,
        patch: { title: 'x' },
      });
      expect(stale).toEqual({
        kind: 'conflict',
        current: { id, revision: 1, title: 'title', body: 'body' },
      });
      const updated = await store.write({
        ...base,
        op: 'update',
        key: newKey(),
        id,
        ifMatch: 1,
        patch: { title: 'x' },
      });
      expect(updated.kind).toBe('applied');
      const deleted = await store.write({ ...base, op: 'delete', key: newKey(), id, ifMatch: 2 });
      expect(deleted).toMatchObject({ kind: 'applied', response: { status: 200, etag: '"3"' } });
      const again = await store.write({ ...base, op: 'delete', key: newKey(), id, ifMatch: 3 });
      expect(again).toEqual({ kind: 'not-found' });
      expect(await store.getNote(principal, id)).toBeUndefined();
      expect(await store.summary(principal)).toEqual({
        notes: 0,
        deleted: 1,
        revisionSum: 3,
        receipts: 3,
      });
    });

    it('edits as another device without a ledger entry', async () => {
      const store = getStore();
      const principal = newUser();
      const id = newKey('note');
      await store.write(create(principal, { id }));
      expect(await store.editNote(principal, id, { body: 'elsewhere' }, NOW)).toEqual({
        id,
        revision: 2,
        title: 'title',
        body: 'elsewhere',
      });
      expect(await store.editNote(principal, 'note-missing', { body: 'x' }, NOW)).toBeUndefined();
      expect(await store.editNote(newUser(), id, { body: 'x' }, NOW)).toBeUndefined();
      expect((await store.summary(principal)).receipts).toBe(1);
    });

    it('lists a principal’s live notes in creation order, up to a limit', async () => {
      const store = getStore();
      const principal = newUser();
      for (const [i, title] of ['a', 'b', 'c'].entries()) {
        await store.write(
          create(principal, { id: `note-${i}-${newKey('x')}`, title, now: NOW + i }),
        );
      }
      expect((await store.listNotes(principal, 10)).map((note) => note.title)).toEqual([
        'a',
        'b',
        'c',
      ]);
      expect(await store.listNotes(principal, 2)).toHaveLength(2);
      expect(await store.listNotes(newUser(), 10)).toEqual([]);
    });

    it('sweeps expired ledger entries in batches and keeps the rest', async () => {
      const store = getStore();
      const principal = newUser();
      const old = Array.from({ length: 5 }, (_, i) => create(principal, { now: 100 + i }));
      const fresh = create(principal, { now: Date.now() });
      for (const command of [...old, fresh]) await store.write(command);
      const batches = [];
      for (let i = 0; i < 4; i++) batches.push(await store.sweepExpired(1_000, 2));
      expect(batches).toEqual([2, 2, 1, 0]);
      for (const command of old) expect(await store.lookup(principal, command.key)).toBeUndefined();
      expect(await store.lookup(principal, fresh.key)).toBeDefined();
      expect((await store.summary(principal)).notes).toBe(6);
    });

    describe('batches (SPEC §15.1)', () => {
      const kinds = (results: Array<PromiseSettledResult<WriteOutcome>>) =>
        results.map((result) => (result.status === 'fulfilled' ? result.value.kind : 'rejected'));
      const update = (principal: string, id: string, ifMatch: number): WriteCommand => ({
        op: 'update',
        principal,
        key: newKey(),
        fingerprint: 'f',
        now: NOW,
        id,
        ifMatch,
        patch: { body: `after ${ifMatch}` },
      });

      it('looks up the completed keys among many, for the caller only', async () => {
        const store = getStore();
        const principal = newUser();
        const written = create(principal);
        const outcome = await store.write(written);
        const unknown = newKey();
        const found = await store.lookupMany(principal, [unknown, written.key]);
        expect([...found]).toEqual([[written.key, (outcome as { response: unknown }).response]]);
        expect((await store.lookupMany(newUser(), [written.key])).size).toBe(0);
        expect((await store.lookupMany(principal, [])).size).toBe(0);
      });

      it('runs a batch in order: each write sees the ones before it', async () => {
        const store = getStore();
        const principal = newUser();
        const id = newKey('note');
        const results = await writeMany(store, [
          create(principal, { id }),
          update(principal, id, 1),
          update(principal, id, 2),
          { op: 'delete', principal, key: newKey(), fingerprint: 'f', now: NOW, id, ifMatch: 3 },
        ]);
        expect(kinds(results)).toEqual(['applied', 'applied', 'applied', 'applied']);
        expect(await store.summary(principal)).toEqual({
          notes: 0,
          deleted: 1,
          revisionSum: 4,
          receipts: 4,
        });
      });

      it('answers misses as write does: conflict, not-found, and a key the batch already used', async () => {
        const store = getStore();
        const principal = newUser();
        const id = newKey('note');
        await store.write(create(principal, { id }));
        const again = create(principal);
        const results = await writeMany(store, [
          update(principal, id, 5),
          update(principal, 'note-missing', 1),
          again,
          { ...again, id: newKey('note') },
        ]);
        expect(kinds(results)).toEqual(['conflict', 'not-found', 'applied', 'completed']);
        expect((results[0] as PromiseFulfilledResult<WriteOutcome>).value).toEqual({
          kind: 'conflict',
          current: { id, revision: 1, title: 'title', body: 'body' },
        });
        expect((await store.summary(principal)).receipts).toBe(2);
      });

      it('explains a miss as of its place in the batch, before the writes after it', async () => {
        const store = getStore();
        const principal = newUser();
        const id = newKey('note');
        const results = await writeMany(store, [
          create(principal, { id }),
          update(principal, id, 7),
          update(principal, id, 1),
          update(principal, id, 1),
        ]);
        expect(kinds(results)).toEqual(['applied', 'conflict', 'applied', 'conflict']);
        const revisions = results.map((result) => {
          const value = (result as PromiseFulfilledResult<WriteOutcome>).value;
          return value.kind === 'conflict' ? value.current.revision : undefined;
        });
        expect(revisions).toEqual([undefined, 1, undefined, 2]);
      });

      it('keeps the other writes of a batch when one fails inside it, and nothing of that one', async () => {
        const store = getStore();
        const principal = newUser();
        const id = newKey('note');
        await store.write(create(principal, { id }));
        const clash = create(principal, { id });
        const results = await writeMany(store, [
          create(principal),
          clash,
          update(principal, id, 1),
        ]);
        expect(kinds(results)).toEqual(['applied', 'rejected', 'applied']);
        expect(await store.lookup(principal, clash.key)).toBeUndefined();
        expect(await store.summary(principal)).toEqual({
          notes: 2,
          deleted: 0,
          revisionSum: 3,
          receipts: 3,
        });
      });

      it('lets twenty racing copies of one batch write each key exactly once', async () => {
        const store = getStore();
        const principal = newUser();
        const batch = Array.from({ length: 5 }, () => create(principal));
        const copies = await Promise.all(
          Array.from({ length: 20 }, () =>
            writeMany(
              store,
              batch.map((command) => ({ ...command, id: newKey('note') })),
            ),
          ),
        );
        for (const [index, command] of batch.entries()) {
          const outcomes = copies.map((copy) => copy[index]!);
          expect(outcomes.every((outcome) => outcome.status === 'fulfilled')).toBe(true);
          const values = outcomes.map(
            (outcome) => (outcome as PromiseFulfilledResult<WriteOutcome>).value,
          );
          expect(values.filter((value) => value.kind === 'applied')).toHaveLength(1);
          expect(values.filter((value) => value.kind === 'completed')).toHaveLength(19);
          expect(await store.lookup(principal, command.key)).toBeDefined();
        }
        expect(await store.summary(principal)).toMatchObject({ notes: 5, receipts: 5 });
      });
    });
  });
}
