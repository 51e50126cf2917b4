import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  ChangeNotice,
  ConflictLedgerEntry,
  OutboxStore,
  Receipt,
  RecordName,
  ReplacePlan,
  Tombstone,
} from '../../shared/model/store.ts';

/** Connections to one fresh database; every `connect` in one test reaches the same data. */
export interface StoreHarness {
  connect(): Promise<OutboxStore>;
}

const OWNER = 'u1';

type RawRow = Record<string, unknown>;

function row(id: string, savedAt: number, extra: RawRow = {}): RawRow {
  return {
    v: 1,
    id,
    owner: OWNER,
    collection: 'notes',
    kind: 'update',
    targetId: `n_${id}`,
    savedAt,
    state: 'queued',
    payload: { title: id },
    ...extra,
  };
}

function plan(fields: Partial<ReplacePlan>): ReplacePlan {
  return { owner: OWNER, expected: [], reason: 'test', ...fields };
}

function receipt(requestId: string, settledAt: number, owner = OWNER): Receipt {
  return {
    requestId,
    owner,
    rowId: requestId,
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    status: 200,
    body: { id: 'n_1', revision: 2 },
    settledAt,
  };
}

function ledgerEntry(successorId: string, settledAt: number, owner = OWNER): ConflictLedgerEntry {
  return {
    successorId,
    originalId: `orig-${successorId}`,
    owner,
    collection: 'notes',
    targetId: 'n_1',
    overwrittenRevision: 3,
    finalRevision: 5,
    lineageLength: 1,
    copy: { remote: { revisionOnly: 4 } },
    recordedAt: settledAt - 1,
    settledAt,
  };
}

function tombstone(id: string): Tombstone {
  return { id, owner: OWNER, reason: 'coalesced', into: 'merged-1', at: 5 };
}

const ids = (rows: unknown[]) => rows.map((r) => (r as RawRow).id);

/** Resolves with the next notice a connection hears, or rejects after `ms`. */
function nextNotice(store: OutboxStore, ms = 2_000): Promise<ChangeNotice> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error('no change notice arrived'));
    }, ms);
    const stop = store.onChange((notice) => {
      clearTimeout(timer);
      stop();
      resolve(notice);
    });
  });
}

/**
 * The contract of {@link OutboxStore} (SPEC §2, §3, §7), run against every implementation.
 * `newHarness` is called once per test and must give an empty database.
 */
export function describeStoreConformance(label: string, newHarness: () => StoreHarness): void {
  describe(`${label} store conformance`, () => {
    let harness: StoreHarness;
    let opened: OutboxStore[];
    let store: OutboxStore;

    const connect = async () => {
      const connection = await harness.connect();
      opened.push(connection);
      return connection;
    };
    const seed = async (rows: RawRow[], target = store) => {
      expect(await target.replace(plan({ put: rows, reason: 'seed' }))).toBe('committed');
    };

    beforeEach(async () => {
      harness = newHarness();
      opened = [];
      store = await connect();
    });

    afterEach(() => {
      for (const connection of opened) connection.close();
    });

    describe('replace and get', () => {
      it('returns undefined for a row that was never written', async () => {
        expect(await store.get('missing')).toBeUndefined();
      });

      it('reads back a committed row equal to what was written, unknown fields included', async () => {
        const written = row('r1', 10, {
          futureField: { nested: [1, 'two', null, { deeper: true }] },
          meta: { tags: ['a'], note: 'ünïcødé' },
          baseRevision: null,
        });
        await seed([written]);
        expect(await store.get('r1')).toEqual(written);
        expect(await store.scan(OWNER, { limit: 10 })).toEqual([written]);
      });

      it('stores and returns untouched a raw value that would not parse as a row', async () => {
        const unindexable = { id: 'x', owner: OWNER, garbage: true };
        const corrupt = { id: 'y', owner: OWNER, savedAt: 2, state: 42, garbage: { deep: [1] } };
        await seed([row('a', 1), unindexable, corrupt, row('b', 3)]);
        expect(await store.get('x')).toEqual(unindexable);
        expect(await store.get('y')).toEqual(corrupt);
        // Without a savedAt the value has no key in by_owner_savedAt, so no scan can see it
        // (IndexedDB semantics, mirrored by the memory store); a corrupt row that has one is
        // returned in place and as stored.
        expect(await store.scan(OWNER, { limit: 10 })).toEqual([row('a', 1), corrupt, row('b', 3)]);
        const quarantined = {
          ...row('y', 2, { state: 'blocked', blockedCode: 'row_corrupt' }),
          raw: corrupt,
        };
        expect(
          await store.replace(plan({ expected: [{ id: 'y', row: corrupt }], put: [quarantined] })),
        ).toBe('committed');
        expect(await store.get('y')).toEqual(quarantined);
      });

      it('keeps stored values apart from the objects callers put and read', async () => {
        const written = row('r1', 1);
        await seed([written]);
        (written.payload as RawRow).title = 'changed after put';
        const read = (await store.get('r1')) as RawRow;
        (read.payload as RawRow).title = 'changed after get';
        expect(await store.get('r1')).toEqual(row('r1', 1));
      });

      it('commits when every expected row still equals its observation', async () => {
        await seed([row('r1', 1), row('r2', 2)]);
        const observed = await store.get('r1');
        const result = await store.replace(
          plan({
            expected: [
              { id: 'r1', row: observed },
              { id: 'r3', row: null },
            ],
            put: [row('r1', 1, { state: 'sending' }), row('r3', 3)],
            delete: ['r2'],
          }),
        );
        expect(result).toBe('committed');
        expect(ids(await store.scan(OWNER, { limit: 10 }))).toEqual(['r1', 'r3']);
        expect((await store.get('r1')) as RawRow).toMatchObject({ state: 'sending' });
      });

      it('treats an undefined observation like null: the row must be absent', async () => {
        const observed = await store.get('r1');
        expect(
          await store.replace(
            plan({ expected: [{ id: 'r1', row: observed }], put: [row('r1', 1)] }),
          ),
        ).toBe('committed');
        expect(
          await store.replace(
            plan({ expected: [{ id: 'r1', row: observed }], put: [row('r1', 2)] }),
          ),
        ).toBe('stale');
      });

      const base = row('r1', 1, { claim: { holderId: 'A', expiresAt: 100, fence: 1 } });
      const { payload: _dropped, ...withoutPayload } = base;
      it.each<{ change: string; before: RawRow | null; after: RawRow | null }>([
        { change: 'a field changed', before: base, after: { ...base, state: 'sending' } },
        { change: 'an unknown field was added', before: base, after: { ...base, legacyFlag: 1 } },
        { change: 'a field was removed', before: base, after: withoutPayload },
        {
          change: 'a nested value changed',
          before: base,
          after: { ...base, claim: { holderId: 'A', expiresAt: 100, fence: 2 } },
        },
        { change: 'a number changed type', before: base, after: { ...base, savedAt: '1' } },
        { change: 'the row was deleted', before: base, after: null },
        { change: 'a row appeared where none was expected', before: null, after: base },
      ])('is stale and writes nothing when $change', async ({ before, after }) => {
        if (before) await seed([before]);
        const observed = before ? await store.get('r1') : null;
        const other = await connect();
        await other.replace(
          after
            ? plan({ put: [after], reason: 'legacy' })
            : plan({ delete: ['r1'], reason: 'legacy' }),
        );

        const result = await store.replace(
          plan({
            expected: [{ id: 'r1', row: observed }],
            put: [row('r1', 1, { state: 'sending' }), row('r2', 2)],
            delete: ['r1'],
            receipts: [receipt('req-1', 5)],
            ledger: [ledgerEntry('succ-1', 5)],
            tombstones: [tombstone('old-1')],
          }),
        );
        expect(result).toBe('stale');
        expect(await store.get('r1')).toEqual(after ?? undefined);
        expect(await store.get('r2')).toBeUndefined();
        expect(await store.getReceipt('req-1')).toBeUndefined();
        expect(await store.listConflicts(OWNER, 10)).toEqual([]);
        expect(await store.getTombstone('old-1')).toBeUndefined();
      });

      it('is stale when one of several expected rows changed', async () => {
        await seed([row('r1', 1), row('r2', 2)]);
        const [r1, r2] = [await store.get('r1'), await store.get('r2')];
        await seed([row('r2', 2, { state: 'held' })]);
        const result = await store.replace(
          plan({
            expected: [
              { id: 'r1', row: r1 },
              { id: 'r2', row: r2 },
            ],
            put: [row('r1', 1, { state: 'sending' })],
          }),
        );
        expect(result).toBe('stale');
        expect(await store.get('r1')).toEqual(row('r1', 1));
      });

      it('lets exactly one of two connections racing to claim one row commit', async () => {
        await seed([row('c1', 1, { kind: 'create' })]);
        const a = await connect();
        const b = await connect();
        const [seenA, seenB] = [await a.get('c1'), await b.get('c1')];
        const claimBy = (holderId: string, seen: unknown) =>
          plan({
            expected: [{ id: 'c1', row: seen }],
            put: [
              row('c1', 1, {
                kind: 'create',
                state: 'sending',
                claim: { holderId, expiresAt: 9, fence: 1 },
              }),
            ],
            reason: 'claim',
          });
        const results = await Promise.all([
          a.replace(claimBy('A', seenA)),
          b.replace(claimBy('B', seenB)),
        ]);
        expect([...results].sort()).toEqual(['committed', 'stale']);
        const winner = results[0] === 'committed' ? 'A' : 'B';
        expect(((await store.get('c1')) as RawRow).claim).toEqual({
          holderId: winner,
          expiresAt: 9,
          fence: 1,
        });
      });

      it('loses no update when two connections compare-and-swap one counter concurrently', async () => {
        await seed([row('counter', 1, { count: 0 })]);
        const increment = async (connection: OutboxStore, times: number) => {
          for (let done = 0; done < times; ) {
            const seen = (await connection.get('counter')) as RawRow;
            const next = { ...seen, count: (seen.count as number) + 1 };
            const result = await connection.replace(
              plan({ expected: [{ id: 'counter', row: seen }], put: [next] }),
            );
            if (result === 'committed') done++;
          }
        };
        await Promise.all([increment(await connect(), 8), increment(await connect(), 8)]);
        expect(((await store.get('counter')) as RawRow).count).toBe(16);
      });

      it('applies puts, deletes, receipts, ledger entries and tombstones together', async () => {
        await seed([row('old', 1)]);
        const result = await store.replace(
          plan({
            expected: [{ id: 'old', row: row('old', 1) }],
            put: [row('new', 1)],
            delete: ['old'],
            receipts: [receipt('req-1', 5)],
            ledger: [ledgerEntry('succ-1', 5)],
            tombstones: [tombstone('old')],
          }),
        );
        expect(result).toBe('committed');
        expect(await store.get('old')).toBeUndefined();
        expect(await store.get('new')).toEqual(row('new', 1));
        expect(await store.getReceipt('req-1')).toEqual(receipt('req-1', 5));
        expect(await store.listConflicts(OWNER, 10)).toEqual([ledgerEntry('succ-1', 5)]);
        expect(await store.getTombstone('old')).toEqual(tombstone('old'));
      });

      it('throws and applies nothing when one write of a plan cannot be stored', async () => {
        await seed([row('old', 1)]);
        const failing = plan({
          expected: [{ id: 'old', row: row('old', 1) }],
          put: [row('new', 1), { owner: OWNER, note: 'no id: no primary key' }],
          delete: ['old'],
          receipts: [receipt('req-1', 5)],
          ledger: [ledgerEntry('succ-1', 5)],
          tombstones: [tombstone('old')],
        });
        await expect(store.replace(failing)).rejects.toThrow();
        expect(await store.get('old')).toEqual(row('old', 1));
        expect(await store.get('new')).toBeUndefined();
        expect(await store.getReceipt('req-1')).toBeUndefined();
        expect(await store.listConflicts(OWNER, 10)).toEqual([]);
        expect(await store.getTombstone('old')).toBeUndefined();
      });

      it('leaves the put row when a plan deletes and puts the same id', async () => {
        await seed([row('r1', 1)]);
        await store.replace(plan({ delete: ['r1'], put: [row('r1', 1, { state: 'held' })] }));
        expect(await store.get('r1')).toEqual(row('r1', 1, { state: 'held' }));
      });

      it.each(['strict', 'default', undefined] as const)(
        'commits with durability %s',
        async (durability) => {
          const result = await store.replace(
            plan({ expected: [{ id: 'r1', row: null }], put: [row('r1', 1)], durability }),
          );
          expect(result).toBe('committed');
          expect(await store.get('r1')).toEqual(row('r1', 1));
        },
      );
    });

    describe('absent receipts and tombstones', () => {
      it('is stale when a receipt or tombstone named absent exists, and commits otherwise', async () => {
        await store.replace(plan({ receipts: [receipt('r1', 1)], reason: 'seed' }));
        await store.replace(
          plan({
            tombstones: [{ id: 't1', owner: OWNER, reason: 'cancelled', at: 1 }],
            reason: 'seed',
          }),
        );
        const put = (id: string, absent: ReplacePlan['absent']) =>
          store.replace(plan({ expected: [{ id, row: null }], put: [row(id, 1)], absent }));
        expect(await put('a', { receipts: ['r1'] })).toBe('stale');
        expect(await put('a', { tombstones: ['t1'] })).toBe('stale');
        expect(await store.get('a')).toBeUndefined();
        expect(await put('a', { receipts: ['r2'], tombstones: ['t2'] })).toBe('committed');
        expect(await store.get('a')).toMatchObject({ id: 'a' });
      });
    });

    describe('records that must hold exactly the named rows', () => {
      it('commits while the record holds exactly those rows, and is stale once another appears', async () => {
        const same = { targetId: 'n_shared' };
        await seed([row('a', 1, same), row('b', 2, { targetId: 'n_other' })]);
        const a = await store.get('a');
        const ack = (records: ReplacePlan['records']) =>
          store.replace(plan({ expected: [{ id: 'a', row: a }], delete: ['a'], records }));
        // Another owner's row on the same record id does not count.
        await store.replace(
          plan({ owner: 'u2', put: [row('x', 3, { ...same, owner: 'u2' })], reason: 'seed' }),
        );
        // Fewer rows than named is stale too: the set must match exactly.
        expect(await ack([{ collection: 'notes', targetId: 'n_shared', ids: ['a', 'gone'] }])).toBe(
          'stale',
        );
        await seed([row('c', 4, same)]);
        expect(await ack([{ collection: 'notes', targetId: 'n_shared', ids: ['a'] }])).toBe(
          'stale',
        );
        expect(await store.get('a')).toEqual(a);
        expect(await ack([{ collection: 'notes', targetId: 'n_shared', ids: ['c', 'a'] }])).toBe(
          'committed',
        );
        expect(await store.get('a')).toBeUndefined();
      });

      it('checks each batched plan against the rows earlier plans of the batch left', async () => {
        await seed([row('a', 1, { targetId: 'n_1' })]);
        const results = await store.replaceEach([
          plan({ put: [row('s', 2, { targetId: 'n_1' })], reason: 'enqueue' }),
          plan({
            expected: [{ id: 'a', row: row('a', 1, { targetId: 'n_1' }) }],
            delete: ['a'],
            records: [{ collection: 'notes', targetId: 'n_1', ids: ['a'] }],
          }),
        ]);
        expect(results).toEqual(['committed', 'stale']);
        expect(ids(await store.byTarget(OWNER, 'notes', 'n_1')).sort()).toEqual(['a', 's']);
      });
    });

    describe('replaceEach (batched claims and ACKs)', () => {
      it('commits each plan whose observation holds and skips each stale one, in one notice', async () => {
        await seed([row('a', 1), row('b', 2), row('c', 3)]);
        const a = await store.get('a');
        const c = await store.get('c');
        await store.replace(plan({ put: [row('b', 2, { state: 'sending' })], reason: 'other' }));
        const heard: ChangeNotice[] = [];
        store.onChange((notice) => heard.push(notice));
        const results = await store.replaceEach([
          plan({
            expected: [{ id: 'a', row: a }],
            put: [row('a', 1, { state: 'sending' })],
            reason: 'claim',
          }),
          plan({
            expected: [{ id: 'b', row: row('b', 2) }],
            put: [row('b', 2, { state: 'x' })],
            reason: 'claim',
          }),
          plan({
            expected: [{ id: 'c', row: c }],
            delete: ['c'],
            receipts: [receipt('c', 5)],
            reason: 'claim',
          }),
        ]);
        expect(results).toEqual(['committed', 'stale', 'committed']);
        expect(await store.get('a')).toMatchObject({ state: 'sending' });
        expect(await store.get('b')).toMatchObject({ state: 'sending' });
        expect(await store.get('c')).toBeUndefined();
        expect(await store.getReceipt('c')).toMatchObject({ requestId: 'c' });
        expect(heard.map((n) => ({ ...n, ids: [...n.ids].sort() }))).toEqual([
          { ids: ['a', 'c'], reason: 'claim', owner: OWNER },
        ]);
      });

      it('lets a later plan of a batch see the writes of an earlier one', async () => {
        await seed([row('a', 1)]);
        const a = await store.get('a');
        const results = await store.replaceEach([
          plan({ expected: [{ id: 'a', row: a }], put: [row('a', 1, { state: 'sending' })] }),
          plan({ expected: [{ id: 'a', row: a }], put: [row('a', 1, { state: 'other' })] }),
        ]);
        expect(results).toEqual(['committed', 'stale']);
        expect(await store.get('a')).toMatchObject({ state: 'sending' });
      });

      it('lets exactly one of two connections racing to claim one row in batches win it', async () => {
        await seed([row('a', 1), row('b', 2)]);
        const other = await connect();
        const a = await store.get('a');
        const b = await store.get('b');
        const claim = (holder: string) => [
          plan({ expected: [{ id: 'a', row: a }], put: [row('a', 1, { holder })] }),
          plan({ expected: [{ id: 'b', row: b }], put: [row('b', 2, { holder })] }),
        ];
        const [mine, theirs] = await Promise.all([
          store.replaceEach(claim('me')),
          other.replaceEach(claim('them')),
        ]);
        expect([...mine!, ...theirs!].filter((r) => r === 'committed')).toHaveLength(2);
        expect(mine).toEqual(
          mine![0] === 'committed' ? ['committed', 'committed'] : ['stale', 'stale'],
        );
        const holders = [(await store.get('a')) as RawRow, (await store.get('b')) as RawRow].map(
          (r) => r.holder,
        );
        expect(holders[0]).toBe(holders[1]);
      });

      it('compares each claim of a batch on its own, wherever its row sits in the queue', async () => {
        const n = (i: number) => `r${String(i).padStart(2, '0')}`;
        await seed(Array.from({ length: 60 }, (_, i) => row(n(i), i)));
        const seen = new Map(ids(await store.scan(OWNER, { limit: 60 })).map((id, i) => [id, i]));
        expect(seen.size).toBe(60);
        const observed = async (i: number) => ({ id: n(i), row: await store.get(n(i)) });
        const claims = await Promise.all(
          [0, 5, 10, 20, 30, 45, 58, 59].map(async (i) =>
            plan({ expected: [await observed(i)], put: [row(n(i), i, { state: 'sending' })] }),
          ),
        );
        const other = await connect();
        await other.replace(plan({ put: [row(n(5), 5, { state: 'held' })], reason: 'legacy' }));
        await other.replace(plan({ delete: [n(10)], reason: 'legacy' }));
        // Moved to the end of the queue, and handed to another owner: neither is as observed.
        await other.replace(plan({ put: [row(n(20), 1_000)], reason: 'legacy' }));
        await other.replace(
          plan({ owner: 'u2', put: [row(n(58), 58, { owner: 'u2' })], reason: 'legacy' }),
        );
        expect(await store.replaceEach(claims)).toEqual([
          'committed',
          'stale',
          'stale',
          'stale',
          'committed',
          'committed',
          'stale',
          'committed',
        ]);
        const states = async (...at: number[]) =>
          Promise.all(at.map(async (i) => ((await store.get(n(i))) as RawRow | undefined)?.state));
        expect(await states(0, 30, 45, 59)).toEqual(['sending', 'sending', 'sending', 'sending']);
        expect(await states(5, 10, 20, 58)).toEqual(['held', undefined, 'queued', 'queued']);
        expect(await states(1, 44)).toEqual(['queued', 'queued']);
      });

      it('checks each ACK of a batch against its own record, as the plans before it left it', async () => {
        await seed([
          row('a', 1, { targetId: 'n_a' }),
          row('b', 2, { targetId: 'n_b' }),
          row('c', 3, { targetId: 'n_c' }),
          row('s', 4, { targetId: 'n_b', successorOf: 'b' }),
          row('t', 5, { targetId: 'n_c', successorOf: 'c' }),
        ]);
        const ack = async (id: string) =>
          plan({
            expected: [{ id, row: await store.get(id) }],
            delete: [id],
            receipts: [receipt(`req-${id}`, 9)],
            records: [{ collection: 'notes', targetId: `n_${id}`, ids: [id] }],
            reason: 'settle',
          });
        const acks = [await ack('a'), await ack('b'), await ack('c')];
        await (await connect()).replace(plan({ put: [row('a', 1, { targetId: 'n_a', x: 1 })] }));
        const results = await store.replaceEach([
          acks[0]!,
          acks[1]!,
          // Once an earlier plan of the batch took the successor away, the record holds only c.
          plan({ expected: [{ id: 't', row: await store.get('t') }], delete: ['t'] }),
          acks[2]!,
        ]);
        expect(results).toEqual(['stale', 'stale', 'committed', 'committed']);
        expect(ids(await store.scan(OWNER, { limit: 10 }))).toEqual(['a', 'b', 's']);
        expect(await store.getReceipt('req-c')).toMatchObject({ requestId: 'req-c' });
        expect(await store.getReceipt('req-a')).toBeUndefined();
      });

      it('compares a row an earlier plan of the batch put as it was stored', async () => {
        await seed([row('a', 1)]);
        const before = await store.get('a');
        const claimed = row('a', 1, { state: 'sending', claim: { holderId: 'me', fence: 1 } });
        const results = await store.replaceEach([
          plan({ expected: [{ id: 'a', row: before }], put: [claimed] }),
          plan({
            expected: [{ id: 'a', row: structuredClone(claimed) }],
            put: [row('a', 1, { state: 'queued', claim: { holderId: 'me', fence: 1 } })],
          }),
          plan({ expected: [{ id: 'a', row: before }], put: [row('a', 1, { state: 'x' })] }),
          plan({ expected: [{ id: 'b', row: null }], put: [row('b', 2)] }),
          plan({ expected: [{ id: 'b', row: null }], put: [row('b', 3)] }),
          plan({ expected: [{ id: 'a', row: await store.get('a') }], delete: ['a'] }),
        ]);
        expect(results).toEqual(['committed', 'committed', 'stale', 'committed', 'stale', 'stale']);
        expect(await store.get('a')).toMatchObject({ state: 'queued' });
        expect(await store.get('b')).toEqual(row('b', 2));
      });

      it('is stale when an earlier plan of the batch wrote a receipt or tombstone named absent', async () => {
        const results = await store.replaceEach([
          plan({ receipts: [receipt('k1', 1)], tombstones: [tombstone('t1')] }),
          plan({ absent: { receipts: ['k1'] }, put: [row('x', 1)] }),
          plan({ absent: { tombstones: ['t1'] }, put: [row('y', 1)] }),
          plan({ absent: { receipts: ['k2'], tombstones: ['t2'] }, put: [row('z', 1)] }),
        ]);
        expect(results).toEqual(['committed', 'stale', 'stale', 'committed']);
        expect(ids(await store.scan(OWNER, { limit: 10 }))).toEqual(['z']);
      });

      it('applies a batch in which a plan names a corrupt value by a key that is not a string', async () => {
        const key = ['legacy', 7];
        const corrupt = { id: key, owner: OWNER, savedAt: 1, junk: true };
        await seed([corrupt, row('a', 2)]);
        const results = await store.replaceEach([
          plan({ expected: [{ id: ['legacy', 7], row: corrupt }], delete: [['legacy', 7]] }),
          plan({ expected: [{ id: 'a', row: row('a', 2) }], put: [row('a', 2, { state: 'x' })] }),
          plan({ expected: [{ id: ['legacy', 7], row: corrupt }], delete: [['legacy', 7]] }),
        ]);
        expect(results).toEqual(['committed', 'committed', 'stale']);
        expect(await store.scan(OWNER, { limit: 10 })).toEqual([row('a', 2, { state: 'x' })]);
      });

      it('applies nothing of a batch whose later plan throws, as an aborted transaction does', async () => {
        await seed([row('a', 1)]);
        const a = await store.get('a');
        await expect(
          store.replaceEach([
            plan({ expected: [{ id: 'a', row: a }], delete: ['a'], put: [row('b', 2)] }),
            plan({ put: [row('c', 3)], tombstones: [tombstone('a')], receipts: [receipt('r', 1)] }),
            plan({ put: [{ owner: OWNER, note: 'no id: no primary key' }] }),
          ]),
        ).rejects.toThrow();
        expect(await store.scan(OWNER, { limit: 10 })).toEqual([row('a', 1)]);
        expect(await store.getTombstone('a')).toBeUndefined();
        expect(await store.getReceipt('r')).toBeUndefined();
      });

      it('returns an empty list for an empty batch and publishes nothing', async () => {
        const heard: ChangeNotice[] = [];
        store.onChange((notice) => heard.push(notice));
        expect(await store.replaceEach([])).toEqual([]);
        expect(heard).toEqual([]);
      });
    });

    describe('seq: order from the store (§6.1)', () => {
      const seqOf = async (id: string, from = store) =>
        ((await from.get(id)) as RawRow | undefined)?.seq;

      it('assigns increasing seq across transactions, inside the transaction that writes the row', async () => {
        await store.replace(plan({ put: [row('a', 9)], seq: ['a'] }));
        await store.replace(plan({ put: [row('b', 1)], seq: ['b'] }));
        expect(await seqOf('a')).toBe(1);
        expect(await seqOf('b')).toBe(2);
      });

      it('keeps the seq a put row carries when the plan does not ask for a fresh one', async () => {
        await store.replace(plan({ put: [row('a', 1)], seq: ['a'] }));
        await store.replace(plan({ put: [row('m', 1, { seq: 1 }), row('v0', 2)] }));
        await store.replace(plan({ put: [row('b', 1)], seq: ['b'] }));
        expect(await store.get('m')).toEqual(row('m', 1, { seq: 1 }));
        expect(await store.get('v0')).toEqual(row('v0', 2));
        expect(await seqOf('b')).toBe(2);
      });

      it('never assigns the same seq twice under concurrent transactions of several connections', async () => {
        const writers = await Promise.all([connect(), connect(), connect()]);
        await Promise.all(
          writers.flatMap((writer, w) =>
            Array.from({ length: 6 }, (_, i) =>
              writer.replace(plan({ put: [row(`w${w}-${i}`, i)], seq: [`w${w}-${i}`] })),
            ),
          ),
        );
        const seqs = (await store.scan(OWNER, { limit: 100 })).map((r) => (r as RawRow).seq);
        expect(seqs).toHaveLength(18);
        expect(new Set(seqs).size).toBe(18);
        expect(Math.max(...(seqs as number[]))).toBe(18);
      });

      it('assigns nothing and raises nothing for a stale plan', async () => {
        await seed([row('a', 1)]);
        const stale = plan({
          expected: [{ id: 'a', row: null }],
          put: [row('x', 2)],
          seq: ['x'],
        });
        expect(await store.replace(stale)).toBe('stale');
        expect(await store.replaceEach([stale])).toEqual(['stale']);
        await store.replace(plan({ put: [row('b', 3)], seq: ['b'] }));
        expect(await seqOf('b')).toBe(1);
      });

      it('assigns in plan order within a batch, skipping stale plans, and keeps one counter per owner', async () => {
        const results = await store.replaceEach([
          plan({ put: [row('x', 1), row('y', 2)], seq: ['y', 'x'] }),
          plan({ expected: [{ id: 'zz', row: row('zz', 1) }], put: [row('s', 1)], seq: ['s'] }),
          plan({ put: [row('z', 3)], seq: ['z'] }),
        ]);
        expect(results).toEqual(['committed', 'stale', 'committed']);
        expect([await seqOf('y'), await seqOf('x'), await seqOf('z')]).toEqual([1, 2, 3]);
        await store.replace(plan({ owner: 'u2', put: [row('o', 1, { owner: 'u2' })], seq: ['o'] }));
        expect(await seqOf('o')).toBe(1);
        await store.replace(plan({ put: [row('w', 1)], seq: ['w'] }));
        expect(await seqOf('w')).toBe(4);
      });

      it('raises nothing when a batch throws: nothing of it is applied', async () => {
        await expect(
          store.replaceEach([
            plan({ put: [row('x', 1)], seq: ['x'] }),
            plan({ put: [{ owner: OWNER, note: 'no id: no primary key' }] }),
          ]),
        ).rejects.toThrow();
        await store.replace(plan({ put: [row('b', 3)], seq: ['b'] }));
        expect(await store.get('x')).toBeUndefined();
        expect(await seqOf('b')).toBe(1);
      });
    });

    describe('one record, one name (§6.1)', () => {
      const PENDING = 'pending:c1';
      const name = (settledAt = 10, owner = OWNER): RecordName => ({
        owner,
        collection: 'notes',
        pendingId: PENDING,
        serverId: 'n_9',
        revision: 1,
        settledAt,
      });
      const underPending = row('p1', 1, { targetId: PENDING });
      const underServer = row('s1', 2, { targetId: 'n_9' });

      it('writes a name in the plan that settles the create, readable by its owner only', async () => {
        expect(await store.getName(OWNER, PENDING)).toBeUndefined();
        await store.replace(plan({ names: [name()], delete: ['c1'] }));
        expect(await store.getName(OWNER, PENDING)).toEqual(name());
        expect(await store.getName('u2', PENDING)).toBeUndefined();
      });

      it('reads the rows of a record by its server id under both its names', async () => {
        await seed([underPending, underServer, row('x', 3, { targetId: 'n_other' })]);
        expect(ids(await store.byTarget(OWNER, 'notes', 'n_9'))).toEqual(['s1']);
        await store.replace(plan({ names: [name()] }));
        expect(ids(await store.byTarget(OWNER, 'notes', 'n_9')).sort()).toEqual(['p1', 's1']);
        // A settled create's pending name is read as its server id by those who read it (§8).
        expect(ids(await store.byTarget(OWNER, 'notes', PENDING))).toEqual(['p1']);
        // Another collection's record of the same ids is another record.
        expect(await store.byTarget(OWNER, 'tasks', 'n_9')).toEqual([]);
      });

      it('checks a plan’s record by its server id under both its names, in one plan and in a batch', async () => {
        await seed([underServer]);
        await store.replace(plan({ names: [name()] }));
        await seed([underPending]);
        const check = (targetId: string, named: string[]) =>
          plan({ records: [{ collection: 'notes', targetId, ids: named }], put: [row('w', 4)] });
        expect(await store.replace(check('n_9', ['s1']))).toBe('stale');
        expect(await store.replaceEach([check('n_9', ['s1']), check(PENDING, ['p1'])])).toEqual([
          'stale',
          'committed',
        ]);
        expect(
          await store.replaceEach([check('n_9', ['s1', 'p1']), check(PENDING, ['p1', 's1'])]),
        ).toEqual(['committed', 'stale']);
      });

      it('reads a pending target under no second name: a name pointing at one names nothing', async () => {
        // Server ids never read as pending targets (a receipt naming one is refused), so a
        // `pending:` record is read under its own name alone, whatever a damaged name says.
        const other = row('p2', 3, { targetId: 'pending:c2' });
        await seed([underPending, other]);
        await store.replace(
          plan({ names: [{ ...name(), pendingId: 'pending:c2', serverId: PENDING }] }),
        );
        expect(ids(await store.byTarget(OWNER, 'notes', PENDING))).toEqual(['p1']);
        const check = (named: string[]) =>
          plan({
            records: [{ collection: 'notes', targetId: PENDING, ids: named }],
            put: [row('w', 4)],
          });
        expect(await store.replaceEach([check(['p1', 'p2']), check(['p1'])])).toEqual([
          'stale',
          'committed',
        ]);
      });

      it('counts a name from the transaction after the one that wrote it', async () => {
        await seed([underServer]);
        const check = (ids: string[]) =>
          plan({ records: [{ collection: 'notes', targetId: 'n_9', ids }] });
        const results = await store.replaceEach([
          plan({ names: [name()], put: [underPending] }),
          check(['s1']),
          check(['s1', 'p1']),
        ]);
        expect(results).toEqual(['committed', 'committed', 'stale']);
        expect(await store.replaceEach([check(['s1']), check(['s1', 'p1'])])).toEqual([
          'stale',
          'committed',
        ]);
      });

      it('prunes a name only once it is old enough and no row names either id, never with receipts', async () => {
        await store.replace(plan({ names: [name(10)], receipts: [receipt('c1', 10)] }));
        const limits = { maxReceipts: 0, olderThan: 100, maxLedger: 10 };
        await store.prune(OWNER, limits);
        expect(await store.getReceipt('c1')).toBeUndefined();
        expect(await store.getName(OWNER, PENDING)).toEqual(name(10));
        await store.prune(OWNER, { ...limits, namesOlderThan: 10 });
        expect(await store.getName(OWNER, PENDING)).toEqual(name(10));
        for (const named of [underPending, underServer]) {
          await seed([named]);
          await store.prune(OWNER, { ...limits, namesOlderThan: 100 });
          expect(await store.getName(OWNER, PENDING)).toEqual(name(10));
          await store.replace(plan({ delete: [named.id as string] }));
        }
        await store.prune('u2', { ...limits, namesOlderThan: 100 });
        expect(await store.getName(OWNER, PENDING)).toEqual(name(10));
        await store.prune(OWNER, { ...limits, namesOlderThan: 100 });
        expect(await store.getName(OWNER, PENDING)).toBeUndefined();
      });
    });

    describe('keys of every valid type, compared by value (§6.1)', () => {
      const keyTypes: Array<[string, () => unknown]> = [
        ['a number', () => 42],
        ['a Date', () => new Date(1_700_000_000_000)],
        ['an array', () => ['legacy', 7]],
        ['a binary', () => new Uint8Array([1, 2, 3]).buffer],
      ];

      it.each(keyTypes)(
        'replaces a corrupt value stored under %s key, named by a key read back or built anew',
        async (_, key) => {
          const corrupt = { id: key(), owner: OWNER, collection: 'notes', targetId: 'n_1' };
          const stored = { ...corrupt, savedAt: 1, junk: true };
          await seed([stored, row('a', 2, { targetId: 'n_1' })]);
          // As a planner reads it: through the queue and the record, keys read back.
          const [read] = await store.scan(OWNER, { limit: 1 });
          const readKey = (read as RawRow).id;
          const quarantine = (id: unknown, observed: unknown) =>
            plan({
              expected: [{ id: id as never, row: observed }],
              records: [{ collection: 'notes', targetId: 'n_1', ids: [key() as never, 'a'] }],
              delete: [id as never],
              put: [row('q', 1, { state: 'blocked', raw: observed })],
            });
          expect(await store.replace(quarantine(readKey, read))).toBe('committed');
          expect(ids(await store.scan(OWNER, { limit: 10 }))).toEqual(['q', 'a']);

          // In a batch too, the compare of a later plan sees the earlier one's delete by value.
          await seed([stored]);
          const results = await store.replaceEach([
            plan({ expected: [{ id: key() as never, row: stored }], delete: [key() as never] }),
            plan({ expected: [{ id: 'a', row: row('a', 2, { targetId: 'n_1' }) }], delete: ['a'] }),
            plan({ expected: [{ id: key() as never, row: stored }], delete: [key() as never] }),
          ]);
          expect(results).toEqual(['committed', 'committed', 'stale']);
          expect(ids(await store.scan(OWNER, { limit: 10 }))).toEqual(['q']);
        },
      );
    });

    describe('scan and byTarget', () => {
      const scrambled = [
        row('d', 2),
        row('b', 1),
        row('e', 3),
        row('a', 1),
        row('c', 2),
        { ...row('x', 0), owner: 'u' },
        { ...row('y', 1), owner: 'u10' },
        { ...row('z', 2), owner: 'u2' },
      ];

      it('returns one owner’s rows in [savedAt, id] order', async () => {
        await seed(scrambled);
        expect(ids(await store.scan(OWNER, { limit: 100 }))).toEqual(['a', 'b', 'c', 'd', 'e']);
      });

      it.each([
        { after: undefined, limit: 2, expected: ['a', 'b'] },
        { after: { savedAt: 1, id: 'a' }, limit: 2, expected: ['b', 'c'] },
        { after: { savedAt: 1, id: 'b' }, limit: 10, expected: ['c', 'd', 'e'] },
        { after: { savedAt: 1, id: 'zz' }, limit: 10, expected: ['c', 'd', 'e'] },
        { after: { savedAt: 2, id: '' }, limit: 10, expected: ['c', 'd', 'e'] },
        { after: { savedAt: 3, id: 'e' }, limit: 10, expected: [] },
        { after: undefined, limit: 0, expected: [] },
      ])(
        'continues strictly after $after with limit $limit',
        async ({ after, limit, expected }) => {
          await seed(scrambled);
          expect(ids(await store.scan(OWNER, { ...(after && { after }), limit }))).toEqual(
            expected,
          );
        },
      );

      it('visits every row once when scanning in batches from the last row seen', async () => {
        const rows = Array.from({ length: 23 }, (_, i) =>
          row(`r${String(i).padStart(2, '0')}`, i % 5),
        );
        await seed(rows);
        const seen: unknown[] = [];
        // Bounded: a scan that failed to move past its cursor must fail, not spin.
        for (
          let batch = await store.scan(OWNER, { limit: 4 });
          batch.length > 0 && seen.length < 50;
        ) {
          seen.push(...batch);
          const last = batch.at(-1) as RawRow;
          batch = await store.scan(OWNER, {
            after: { savedAt: last.savedAt as number, id: last.id as string },
            limit: 4,
          });
        }
        const byOrder = [...rows].sort(
          (x, y) =>
            (x.savedAt as number) - (y.savedAt as number) ||
            String(x.id).localeCompare(String(y.id)),
        );
        expect(seen).toEqual(byOrder);
      });

      it('continues from a cursor whose rows were deleted, draining the rest in batches', async () => {
        const rows = Array.from({ length: 20 }, (_, i) => row(`r${String(i).padStart(2, '0')}`, i));
        await seed(rows);
        await store.replace(plan({ delete: rows.slice(0, 5).map((r) => r.id as string) }));
        const cursor = { savedAt: 4, id: 'r04' };
        expect(ids(await store.scan(OWNER, { after: cursor, limit: 100 }))).toEqual(
          ids(rows.slice(5)),
        );

        const drained: unknown[] = [];
        let after = cursor;
        for (let round = 0; round < 10; round++) {
          const batch = (await store.scan(OWNER, { after, limit: 4 })) as RawRow[];
          if (batch.length === 0) break;
          drained.push(...ids(batch));
          await store.replace(plan({ delete: batch.map((r) => r.id as string) }));
          const last = batch.at(-1) as RawRow;
          after = { savedAt: last.savedAt as number, id: last.id as string };
        }
        expect(drained).toEqual(ids(rows.slice(5)));
        expect(await store.scan(OWNER, { limit: 100 })).toEqual([]);
      });

      it('returns the rows of one record of one owner from byTarget', async () => {
        await seed([
          row('a', 1, { targetId: 'n_1' }),
          row('b', 2, { targetId: 'n_1', kind: 'delete' }),
          row('c', 3, { targetId: 'n_2' }),
          row('d', 4, { targetId: 'n_1', collection: 'todos' }),
          { ...row('e', 5, { targetId: 'n_1' }), owner: 'u2' },
        ]);
        const found = await store.byTarget(OWNER, 'notes', 'n_1');
        expect(ids(found).sort()).toEqual(['a', 'b']);
        expect(await store.byTarget(OWNER, 'notes', 'n_9')).toEqual([]);
        // Several records in one call, each as byTarget reads it, in the order asked.
        const each = await store.byTargets(OWNER, [
          { collection: 'notes', targetId: 'n_2' },
          { collection: 'notes', targetId: 'n_9' },
          { collection: 'notes', targetId: 'n_1' },
          { collection: 'todos', targetId: 'n_1' },
        ]);
        expect(each.map((rows) => ids(rows).sort())).toEqual([['c'], [], ['a', 'b'], ['d']]);
        expect(await store.byTargets(OWNER, [])).toEqual([]);
        // The last look's own row may be left out; a record of it alone reads as nothing else.
        const looked = await store.byTargets(OWNER, [
          { collection: 'notes', targetId: 'n_2', except: 'c' },
          { collection: 'notes', targetId: 'n_1', except: 'a' },
          { collection: 'notes', targetId: 'n_2', except: 'zz' },
        ]);
        expect(looked[0]).toEqual([]);
        expect(ids(looked[1]!)).toContain('b');
        expect(ids(looked[2]!)).toEqual(['c']);
      });

      it('reads the rows that may hold others: on the wire, or following another row, of one owner', async () => {
        await seed([
          row('q', 1),
          row('s', 2, { state: 'sending' }),
          row('f', 3, { successorOf: 'q' }),
          row('t', 4, { state: 'sending', successorOf: 'q' }),
          row('b', 5, { state: 'blocked' }),
          // A value damaged in place still holds by the fields an index can read.
          row('d', 6, { state: 'sending', collection: 7 }),
          { ...row('o', 7, { state: 'sending', successorOf: 'x' }), owner: 'u' },
        ]);
        const found = ids(await store.holdingRows(OWNER));
        expect([...new Set(found)].sort()).toEqual(['d', 'f', 's', 't']);
        expect(ids(await store.holdingRows('u'))).toEqual(['o', 'o']);
        expect(await store.holdingRows('nobody')).toEqual([]);
      });

      it('never returns another owner’s rows', async () => {
        await seed(scrambled);
        expect(ids(await store.scan('u', { limit: 100 }))).toEqual(['x']);
        expect(ids(await store.scan('u2', { limit: 100 }))).toEqual(['z']);
        expect(await store.scan('nobody', { limit: 100 })).toEqual([]);
        expect(await store.byTarget('u10', 'notes', 'n_y')).toEqual([
          { ...row('y', 1), owner: 'u10' },
        ]);
      });
    });

    describe('receipts, conflict ledger, tombstones and meta', () => {
      it('reads back a receipt by request id; writing it again keeps one', async () => {
        await store.replace(plan({ receipts: [receipt('req-1', 5)] }));
        await store.replace(plan({ receipts: [receipt('req-1', 5)] }));
        expect(await store.getReceipt('req-1')).toEqual(receipt('req-1', 5));
        expect(await store.getReceipt('req-2')).toBeUndefined();
        expect(await store.listReceipts(OWNER, 10)).toHaveLength(1);
      });

      it('removes ledger entries by successor id in the plan that completes or replaces others, and in a stale plan removes none', async () => {
        const pending = { ...ledgerEntry('s-1', 5), finalRevision: null, unsettled: true as const };
        await seed([row('r1', 1)]);
        await store.replace(plan({ ledger: [pending, ledgerEntry('s-2', 6)] }));
        const stale = plan({
          expected: [{ id: 'r1', row: null }],
          ledgerDelete: ['s-1'],
          ledger: [ledgerEntry('s-3', 7)],
        });
        expect(await store.replace(stale)).toBe('stale');
        expect((await store.listConflicts(OWNER, 10)).map((e) => e.successorId)).toEqual([
          's-2',
          's-1',
        ]);
        const moved = plan({
          expected: [{ id: 'r1', row: row('r1', 1) }],
          ledgerDelete: ['s-1', 'never-written'],
          ledger: [ledgerEntry('s-3', 7)],
        });
        expect(await store.replace(moved)).toBe('committed');
        expect(await store.listConflicts(OWNER, 10)).toEqual([
          ledgerEntry('s-3', 7),
          ledgerEntry('s-2', 6),
        ]);
      });

      it('lists receipts and ledger entries newest first, limited, per owner', async () => {
        await store.replace(
          plan({
            receipts: [
              receipt('r-b', 20),
              receipt('r-a', 10),
              receipt('r-c', 30),
              receipt('r-o', 40, 'u2'),
            ],
            ledger: [
              ledgerEntry('s-b', 20),
              ledgerEntry('s-c', 30),
              ledgerEntry('s-a', 10),
              ledgerEntry('s-o', 40, 'u2'),
            ],
          }),
        );
        expect((await store.listReceipts(OWNER, 10)).map((r) => r.requestId)).toEqual([
          'r-c',
          'r-b',
          'r-a',
        ]);
        expect((await store.listReceipts(OWNER, 2)).map((r) => r.requestId)).toEqual([
          'r-c',
          'r-b',
        ]);
        expect(await store.listReceipts(OWNER, 0)).toEqual([]);
        expect((await store.listConflicts(OWNER, 10)).map((e) => e.successorId)).toEqual([
          's-c',
          's-b',
          's-a',
        ]);
        expect((await store.listConflicts(OWNER, 1)).map((e) => e.successorId)).toEqual(['s-c']);
        expect((await store.listConflicts('u2', 10)).map((e) => e.successorId)).toEqual(['s-o']);
      });

      it.each([
        { limits: { maxReceipts: 10, olderThan: 0, maxLedger: 10 }, receipts: 6, ledger: 6 },
        { limits: { maxReceipts: 3, olderThan: 0, maxLedger: 10 }, receipts: 3, ledger: 6 },
        { limits: { maxReceipts: 10, olderThan: 4, maxLedger: 10 }, receipts: 3, ledger: 6 },
        { limits: { maxReceipts: 2, olderThan: 3, maxLedger: 1 }, receipts: 2, ledger: 1 },
        { limits: { maxReceipts: 0, olderThan: 0, maxLedger: 0 }, receipts: 0, ledger: 0 },
      ])(
        'prunes oldest first to $receipts receipts and $ledger ledger entries with $limits',
        async ({ limits, receipts: keptReceipts, ledger: keptLedger }) => {
          const times = [1, 2, 3, 4, 5, 6];
          await store.replace(
            plan({
              receipts: [...times.map((t) => receipt(`r-${t}`, t)), receipt('r-other', 1, 'u2')],
              ledger: [
                ...times.map((t) => ledgerEntry(`s-${t}`, t)),
                ledgerEntry('s-other', 1, 'u2'),
              ],
            }),
          );
          await store.prune(OWNER, limits);
          const newest = [6, 5, 4, 3, 2, 1];
          expect((await store.listReceipts(OWNER, 100)).map((r) => r.requestId)).toEqual(
            newest.slice(0, keptReceipts).map((t) => `r-${t}`),
          );
          expect((await store.listConflicts(OWNER, 100)).map((e) => e.successorId)).toEqual(
            newest.slice(0, keptLedger).map((t) => `s-${t}`),
          );
          expect(await store.getReceipt('r-other')).toEqual(receipt('r-other', 1, 'u2'));
          expect(await store.listConflicts('u2', 10)).toHaveLength(1);
        },
      );

      it('prunes more receipts than fit in one batch', async () => {
        const many = Array.from({ length: 250 }, (_, i) => receipt(`r-${i}`, i));
        await store.replace(plan({ receipts: many }));
        await store.prune(OWNER, { maxReceipts: 10, olderThan: 0, maxLedger: 100 });
        const kept = await store.listReceipts(OWNER, 1_000);
        expect(kept.map((r) => r.settledAt)).toEqual([
          249, 248, 247, 246, 245, 244, 243, 242, 241, 240,
        ]);
      });

      it('reads several rows at once, in the order asked, undefined where absent', async () => {
        await seed([row('a', 1), row('b', 2)]);
        const [b, missing, a] = await store.getMany(['b', 'nope', 'a']);
        expect([b, missing, a]).toEqual([await store.get('b'), undefined, await store.get('a')]);
        expect((b as RawRow).id).toBe('b');
        expect(await store.getMany([])).toEqual([]);
      });

      it('reads back a tombstone by row id', async () => {
        await store.replace(plan({ tombstones: [tombstone('gone-1')] }));
        expect(await store.getTombstone('gone-1')).toEqual(tombstone('gone-1'));
        expect(await store.getTombstone('gone-2')).toBeUndefined();
      });

      it('reads a row, receipt or tombstone by id only as its owner may: another owner’s reads as absent (G6)', async () => {
        await seed([row('a', 1), { ...row('b', 2), owner: 'u2' }]);
        await store.replace(
          plan({
            receipts: [receipt('r-1', 5), receipt('r-2', 5, 'u2')],
            tombstones: [tombstone('t-1'), { ...tombstone('t-2'), owner: 'u2' }],
          }),
        );
        expect(await store.get('a', OWNER)).toEqual(row('a', 1));
        expect(await store.get('b', OWNER)).toBeUndefined();
        expect(await store.get('b', 'u2')).toEqual({ ...row('b', 2), owner: 'u2' });
        expect(await store.getMany(['a', 'b'], OWNER)).toEqual([row('a', 1), undefined]);
        expect(await store.getReceipt('r-1', OWNER)).toEqual(receipt('r-1', 5));
        expect(await store.getReceipt('r-2', OWNER)).toBeUndefined();
        expect(await store.getTombstone('t-1', OWNER)).toEqual(tombstone('t-1'));
        expect(await store.getTombstone('t-2', OWNER)).toBeUndefined();
        // Without an owner a read is the store's own (the id is taken, whoever owns it).
        expect(await store.get('b')).toEqual({ ...row('b', 2), owner: 'u2' });
      });

      it('stores a meta value, overwrites it, and deletes it when set to undefined', async () => {
        expect(await store.getMeta('auth')).toBeUndefined();
        await store.setMeta('auth', { headers: { 'X-Token': 'a' }, persist: true });
        expect(await store.getMeta('auth')).toEqual({ headers: { 'X-Token': 'a' }, persist: true });
        await store.setMeta('auth', [1, null, 'x']);
        expect(await store.getMeta('auth')).toEqual([1, null, 'x']);
        await store.setMeta('auth', undefined);
        expect(await store.getMeta('auth')).toBeUndefined();
      });

      it('loses no meta update when two connections read-modify-write one value at once', async () => {
        const add = async (connection: OutboxStore, names: string[]) => {
          for (const name of names) {
            await connection.updateMeta('owners', (value) => [
              ...(Array.isArray(value) ? value : []),
              name,
            ]);
          }
        };
        const names = (prefix: string) => Array.from({ length: 10 }, (_, i) => `${prefix}${i}`);
        await Promise.all([add(await connect(), names('a')), add(await connect(), names('b'))]);
        const stored = (await store.getMeta('owners')) as string[];
        expect([...stored].sort()).toEqual([...names('a'), ...names('b')].sort());
        expect(await store.updateMeta('owners', () => undefined)).toBeUndefined();
        expect(await store.getMeta('owners')).toBeUndefined();
      });
    });

    describe('change notices', () => {
      it('publishes exactly one notice per commit to this connection, with ids, reason and owner', async () => {
        const heard: ChangeNotice[] = [];
        store.onChange((notice) => heard.push(notice));
        await store.replace(plan({ put: [row('a', 1), row('b', 2)], reason: 'enqueue' }));
        await seed([row('c', 3)]);
        await store.replace(
          plan({ delete: ['a'], put: [row('c', 3, { state: 'sending' })], reason: 'claim' }),
        );
        expect(heard.map((n) => ({ ...n, ids: [...n.ids].sort() }))).toEqual([
          { ids: ['a', 'b'], reason: 'enqueue', owner: OWNER },
          { ids: ['c'], reason: 'seed', owner: OWNER },
          { ids: ['a', 'c'], reason: 'claim', owner: OWNER },
        ]);
      });

      it('publishes nothing for a stale or failed replace', async () => {
        await seed([row('a', 1)]);
        const heard: ChangeNotice[] = [];
        store.onChange((notice) => heard.push(notice));
        expect(
          await store.replace(plan({ expected: [{ id: 'a', row: null }], put: [row('a', 2)] })),
        ).toBe('stale');
        await expect(store.replace(plan({ put: [{ owner: OWNER }] }))).rejects.toThrow();
        await seed([row('b', 2)]);
        expect(heard.map((n) => n.ids)).toEqual([['b']]);
      });

      it('delivers each commit exactly once to another connection of the same database', async () => {
        const other = await connect();
        const heard: ChangeNotice[] = [];
        other.onChange((notice) => heard.push(notice));
        const first = nextNotice(other);
        await store.replace(plan({ put: [row('a', 1)], reason: 'enqueue' }));
        expect(await first).toEqual({ ids: ['a'], reason: 'enqueue', owner: OWNER });
        // Notices arrive in commit order, so once the second is heard a duplicate of the first
        // would already have shown.
        const second = nextNotice(other);
        await store.replace(plan({ delete: ['a'], reason: 'settle' }));
        await second;
        expect(heard.map((n) => n.reason)).toEqual(['enqueue', 'settle']);
      });

      it('announces a commit that holds a row for credentials as `held`, alone or batched, so pages can say so at once (§23)', async () => {
        const other = await connect();
        const seeded = nextNotice(other);
        await seed([row('a', 1), row('b', 2), row('c', 3)]);
        await seeded;
        const held = (r: RawRow) => ({ ...r, state: 'held', heldAt: 5 });
        const first = nextNotice(other);
        await store.replace(
          plan({
            expected: [{ id: 'a', row: row('a', 1) }],
            put: [held(row('a', 1))],
            reason: 'settle',
          }),
        );
        expect(await first).toEqual({ ids: ['a'], reason: 'held', owner: OWNER });
        // Batched with a plain settle: one notice, held.
        const second = nextNotice(other);
        await store.replaceEach([
          plan({ expected: [{ id: 'b', row: row('b', 2) }], delete: ['b'], reason: 'settle' }),
          plan({
            expected: [{ id: 'c', row: row('c', 3) }],
            put: [held(row('c', 3))],
            reason: 'settle',
          }),
        ]);
        expect(await second).toMatchObject({ reason: 'held', owner: OWNER });
        // A commit that holds nothing keeps its reason.
        const third = nextNotice(other);
        await store.replace(plan({ delete: ['a'], reason: 'settle' }));
        expect(await third).toEqual({ ids: ['a'], reason: 'settle', owner: OWNER });
      });

      it('stops notifying a listener once unsubscribed', async () => {
        const heard: ChangeNotice[] = [];
        const stop = store.onChange((notice) => heard.push(notice));
        await seed([row('a', 1)]);
        stop();
        await seed([row('b', 2)]);
        expect(heard).toHaveLength(1);
      });
    });

    it('rejects every call with the closed code after close', async () => {
      store.close();
      await expect(store.get('a')).rejects.toMatchObject({ code: 'closed' });
      await expect(store.replace(plan({ put: [row('a', 1)] }))).rejects.toMatchObject({
        code: 'closed',
      });
      await expect(store.scan(OWNER, { limit: 1 })).rejects.toMatchObject({ code: 'closed' });
    });
  });
}
