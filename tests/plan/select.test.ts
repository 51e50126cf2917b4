import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { rowStatus } from '../../shared/plan/row-status.ts';
import {
  type PredecessorState,
  recordTurn,
  type SelectContext,
  selectSendableRows,
  sendability,
} from '../../shared/plan/select.ts';
import {
  claimedBy,
  createRow,
  deferred,
  intentRow,
  LEASE,
  legacySending,
  NOW,
  OTHER,
  updateRow,
} from './fixtures.ts';

const ctx: SelectContext = { now: NOW, leaseMs: LEASE, force: false };
const PRESENT = 'notes-0000000000000000000pred';
const BLOCKED = 'notes-000000000000000000000blk';
const predecessors: Record<string, PredecessorState> = {
  [PRESENT]: 'present',
  [BLOCKED]: 'blocked',
};
const predecessor = (id: string): PredecessorState => predecessors[id] ?? 'absent';

let serial = 0;
/** A row of its own record (one record per row), saved in table order. */
function record(row: OutboxRow): OutboxRow {
  serial++;
  const id = `notes-${serial.toString(16).padStart(24, '0')}`;
  return { ...row, id, targetId: `n_${serial}`, savedAt: NOW - 10_000 + serial };
}

/**
 * SPEC §7, one row per record, in the order the rules apply: each drop rule, and the rows that
 * pass them. `sendability` names the first rule that drops a row.
 */
const RULES: { name: string; row: OutboxRow; reason: string; forced?: string }[] = [
  {
    name: 'a blocked row is dropped',
    row: record(updateRow({ state: 'blocked' })),
    reason: 'blocked',
  },
  { name: 'a held row is dropped', row: record(updateRow({ state: 'held' })), reason: 'held' },
  {
    name: "a row in flight under another holder's live claim is dropped",
    row: record(claimedBy(updateRow(), OTHER, 1, NOW - 1)),
    reason: 'in_flight',
  },
  {
    name: "a legacy tab's fresh sending row is dropped as in flight",
    row: record(legacySending(updateRow(), NOW - 1)),
    reason: 'in_flight',
  },
  {
    name: 'a row whose predecessor still exists waits for it',
    row: record(updateRow({ successorOf: PRESENT })),
    reason: 'waiting',
  },
  {
    name: 'a row whose predecessor is blocked may go',
    row: record(updateRow({ successorOf: BLOCKED })),
    reason: 'sendable',
  },
  {
    name: 'a row whose predecessor is gone may go',
    row: record(updateRow({ successorOf: 'notes-00000000000000000000gone' })),
    reason: 'sendable',
  },
  {
    name: 'an intent row is never sent as it is',
    row: record(intentRow('notes-00000000000000000000gone')),
    reason: 'intent',
  },
  {
    name: 'a row backing off is dropped unless the flush is forced',
    row: record(deferred(updateRow())),
    reason: 'backoff',
    forced: 'sendable',
  },
  {
    name: 'a row whose backoff time has come may go',
    row: record({ ...deferred(updateRow()), nextAttemptAt: NOW }),
    reason: 'sendable',
  },
  {
    name: 'a row in an unknown state is dropped, not deleted',
    row: record(updateRow({ state: 'archived' })),
    reason: 'unknown_state',
  },
  {
    name: 'a legacy sending row whose lease ran out may go',
    row: record(legacySending(updateRow(), NOW - LEASE)),
    reason: 'sendable',
  },
  { name: 'a queued row may go', row: record(updateRow()), reason: 'sendable' },
];

describe('sendable selection, one rule per row (SPEC §7)', () => {
  it.each(RULES)('$name', ({ row, reason, forced }) => {
    expect(sendability(row, ctx, predecessor)).toBe(reason);
    expect(sendability(row, { ...ctx, force: true }, predecessor)).toBe(forced ?? reason);
  });

  it('selectSendableRows keeps exactly the rows that pass every rule, in queue order', () => {
    const rows = RULES.map((r) => r.row);
    const chosen = selectSendableRows(rows, ctx, predecessor).map((r) => r.id);
    expect(chosen).toEqual(RULES.filter((r) => r.reason === 'sendable').map((r) => r.row.id));
    const forced = selectSendableRows(rows, { ...ctx, force: true }, predecessor).map((r) => r.id);
    expect(forced).toEqual(
      RULES.filter((r) => (r.forced ?? r.reason) === 'sendable').map((r) => r.row.id),
    );
  });
});

/** A row that matches several rules is dropped by the first one, in the order of §7. */
describe('the rules apply in order', () => {
  it.each([
    {
      name: 'a blocked row with a live claim reads as blocked',
      row: { ...claimedBy(updateRow(), OTHER, 1), state: 'blocked' },
      reason: 'blocked',
    },
    {
      name: 'a held row with a live claim reads as held',
      row: { ...claimedBy(updateRow(), OTHER, 1), state: 'held' },
      reason: 'held',
    },
    {
      name: 'a row in flight that has a waiting predecessor reads as in flight',
      row: claimedBy(updateRow({ successorOf: PRESENT }), OTHER, 1),
      reason: 'in_flight',
    },
    {
      name: 'a waiting intent reads as waiting',
      row: intentRow('c', { successorOf: PRESENT }),
      reason: 'waiting',
    },
    {
      name: 'an intent with a backoff time reads as an intent',
      row: { ...intentRow('c'), nextAttemptAt: NOW + 1 },
      reason: 'intent',
    },
    {
      name: 'an unknown state with a backoff time reads as backing off',
      row: updateRow({ state: 'archived', nextAttemptAt: NOW + 1 }),
      reason: 'backoff',
    },
  ])('$name', ({ row, reason }) => {
    expect(sendability(row, ctx, predecessor)).toBe(reason);
  });
});

/** G4: rows of one record never travel together, and an earlier row that waits holds later ones. */
describe('at most one row per record is selected', () => {
  const first = updateRow({ id: 'notes-000000000000000000000001', savedAt: NOW - 300 });
  const second = updateRow({ id: 'notes-000000000000000000000002', savedAt: NOW - 200 });

  it.each([
    {
      name: 'two queued rows of one record: only the first goes',
      rows: [first, second],
      chosen: [first.id],
    },
    {
      name: 'an earlier row backing off holds back the later row of its record',
      rows: [deferred(first), second],
      chosen: [],
    },
    {
      name: 'an earlier row in flight holds back the later row of its record',
      rows: [claimedBy(first, OTHER, 1), second],
      chosen: [],
    },
    {
      name: 'a blocked earlier row does not hold back the later row of its record',
      rows: [updateRow({ ...first, state: 'blocked' }), second],
      chosen: [second.id],
    },
  ])('$name', ({ rows, chosen }) => {
    expect(selectSendableRows(rows, ctx, predecessor).map((r) => r.id)).toEqual(chosen);
  });

  // Found by tests/property/interleavings: a successor saved in the same millisecond as its
  // predecessor (or under a clock that stepped back) can sort before it in [savedAt, id] order.
  const tie = NOW - 100;
  const sortsLater = updateRow({ id: 'notes-00000000000000000000000b', savedAt: tie });
  const waitsOnIt = updateRow({
    id: 'notes-00000000000000000000000a',
    savedAt: tie,
    successorOf: sortsLater.id,
  });
  const createLater = createRow({ id: 'notes-00000000000000000000000b', savedAt: tie });
  const intentFirst = intentRow(createLater.id, {
    id: 'notes-00000000000000000000000a',
    savedAt: tie,
  });

  it.each([
    {
      name: 'a successor that sorts before its predecessor does not hold the predecessor back',
      rows: [waitsOnIt, sortsLater],
      chosen: [sortsLater.id],
    },
    {
      name: 'an intent that sorts before its create does not hold the create back',
      rows: [intentFirst, createLater],
      chosen: [createLater.id],
    },
    {
      name: 'a successor that sorts before its predecessor in backoff still waits',
      rows: [waitsOnIt, deferred(sortsLater)],
      chosen: [],
    },
  ])('$name', ({ rows, chosen }) => {
    const present = new Set(rows.map((r) => r.id));
    const lookup = (id: string): PredecessorState => (present.has(id) ? 'present' : 'absent');
    expect(selectSendableRows(rows, ctx, lookup).map((r) => r.id)).toEqual(chosen);
  });

  it.each([
    { name: 'a row of it on backoff', earlier: deferred(first) },
    { name: 'a row of it in flight', earlier: claimedBy(first, OTHER, 1) },
    { name: 'a row of it sent by a legacy tab', earlier: legacySending(first, NOW - 10) },
    { name: 'an intent of it', earlier: { ...intentRow('c'), targetId: first.targetId } },
  ])(
    'an earlier row of a record ($name) holds its later rows, linked or not, in any order (§6.1, G4)',
    ({ earlier }) => {
      const made = [
        { ...earlier, seq: 1 },
        { ...second, seq: 2 },
      ];
      expect(recordTurn(made, ctx, predecessor).kind).toBe('wait');
      expect(recordTurn([...made].reverse(), ctx, predecessor).kind).toBe('wait');
    },
  );

  it('a blocked earlier row does not hold its record; a row held for credentials does', () => {
    const blocked = [updateRow({ ...first, state: 'blocked', seq: 1 }), { ...second, seq: 2 }];
    expect(recordTurn(blocked, ctx, predecessor)).toEqual({ kind: 'go', row: blocked[1] });
    const held = [updateRow({ ...first, state: 'held', seq: 1 }), { ...second, seq: 2 }];
    expect(recordTurn(held, ctx, predecessor)).toEqual({ kind: 'wait', why: 'held' });
  });

  it('a record already being sent by this holder is skipped', () => {
    const busy = new Set([`notes\u0000n_1`]);
    expect(selectSendableRows([first], ctx, predecessor, busy)).toEqual([]);
  });
});

/** §6.1: which edit came first is the store's commit order (`seq`), never a clock reading. */
describe("a record's turn", () => {
  const made = (seq: number, savedAt: number, extra: Partial<OutboxRow> = {}) =>
    updateRow({ id: `notes-${seq.toString(16).padStart(24, '0')}`, seq, savedAt, ...extra });

  it('goes by seq whatever the clocks say: saved later, stepped back, or in the same millisecond', () => {
    for (const [a, b] of [
      [NOW - 100, NOW - 500],
      [NOW - 100, NOW - 100],
    ] as const) {
      const earlier = made(1, a, { id: 'notes-00000000000000000000000f' });
      const later = made(2, b, { id: 'notes-000000000000000000000001' });
      expect(recordTurn([later, earlier], ctx, predecessor)).toEqual({ kind: 'go', row: earlier });
    }
  });

  it('sends nothing while any row of the record is in flight, whoever holds it', () => {
    const rows = [made(1, NOW - 300, { state: 'blocked' }), made(2, NOW - 200), made(3, NOW - 100)];
    for (const inFlight of [claimedBy(rows[2]!, OTHER, 1), legacySending(rows[2]!, NOW - 10)]) {
      const turn = recordTurn([rows[0]!, rows[1]!, inFlight], ctx, predecessor);
      expect(turn).toEqual({ kind: 'wait', why: 'in_flight' });
    }
  });

  it('a row without seq has no place among rows with one: the one that waits on the other by its link goes after it', () => {
    const legacy = updateRow({ id: 'v0row-00000000000000000001', savedAt: NOW - 50 });
    const follows = made(1, NOW - 900, { successorOf: legacy.id });
    const lookup = (id: string): PredecessorState => (id === legacy.id ? 'present' : 'absent');
    expect(recordTurn([follows, legacy], ctx, lookup)).toEqual({ kind: 'go', row: legacy });
    // Unlinked, the clock does not put the legacy row first though it was saved earlier.
    const unlinked = made(1, NOW - 10);
    const older = { ...legacy, savedAt: NOW - 9_000 };
    expect(recordTurn([older, unlinked], ctx, predecessor)).toEqual({ kind: 'go', row: unlinked });
  });

  it('a newer format row not in flight holds nothing: the next edit goes at once (§6)', () => {
    const newer = { ...made(1, NOW - 300), v: 2 } as unknown as OutboxRow;
    const next = made(2, NOW - 200);
    expect(recordTurn([newer, next], ctx, predecessor)).toEqual({ kind: 'go', row: next });
  });
});

/** SPEC §2: the derived display status, never stored. */
describe('rowStatus', () => {
  it.each([
    { status: 'queued', row: updateRow() },
    { status: 'deferred', row: deferred(updateRow()) },
    { status: 'sending', row: claimedBy(updateRow(), OTHER, 1) },
    { status: 'sending', row: legacySending(updateRow(), NOW - 1) },
    { status: 'waiting', row: updateRow({ successorOf: PRESENT }) },
    { status: 'intent', row: intentRow('notes-00000000000000000000gone') },
    { status: 'held', row: updateRow({ state: 'held' }) },
    { status: 'blocked', row: updateRow({ state: 'blocked' }) },
    { status: 'unknown', row: updateRow({ state: 'archived' }) },
  ])('a row shows as $status', ({ row, status }) => {
    expect(rowStatus(row, ctx, predecessor)).toBe(status);
  });
});

/** SPEC §12 "Recovery pulls the queue forward": one rule per case. */
describe('rows deferred for network reasons are due once their origin answered again', () => {
  const networkDeferred = (code: string, url = '/api/notes/n_1') => {
    const row = deferred(updateRow());
    return {
      ...row,
      request: { ...row.request!, url },
      evidence: { ...row.evidence!, lastErrorCode: code },
    };
  };
  it.each([
    {
      rule: 'a row the network failed is due once a request to its origin succeeded',
      row: networkDeferred('network'),
      recovered: [''],
      reason: 'sendable',
    },
    {
      rule: 'a row whose attempt timed out is due too',
      row: networkDeferred('timeout'),
      recovered: [''],
      reason: 'sendable',
    },
    {
      rule: 'a row a server deferred (503, Retry-After) keeps waiting: the server asked for time',
      row: networkDeferred('http_503'),
      recovered: [''],
      reason: 'backoff',
    },
    {
      rule: 'a row for another origin keeps waiting',
      row: networkDeferred('network', 'https://api.example.com/notes/n_1'),
      recovered: [''],
      reason: 'backoff',
    },
    {
      rule: 'a row for an absolute URL is due once its own origin answered',
      row: networkDeferred('network', 'https://api.example.com/notes/n_1'),
      recovered: ['https://api.example.com'],
      reason: 'sendable',
    },
    {
      rule: 'nothing is pulled forward before any request succeeded',
      row: networkDeferred('network'),
      recovered: [],
      reason: 'backoff',
    },
  ])('$rule', ({ row, recovered, reason }) => {
    expect(sendability(row, { ...ctx, recovered: new Set(recovered) }, predecessor)).toBe(reason);
  });
});
