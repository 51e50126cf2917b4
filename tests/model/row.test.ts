import { describe, expect, it } from 'vitest';
import { decodeRow, type OutboxRow } from '../../shared/model/row.ts';
import { planClaim } from '../../shared/plan/claim.ts';
import { planConflictSuccessor } from '../../shared/plan/conflict-successor.ts';
import { planEnqueue } from '../../shared/plan/enqueue.ts';
import { planIntentConversion } from '../../shared/plan/intent-conversion.ts';
import { planQuarantine } from '../../shared/plan/quarantine.ts';
import { rowStatus } from '../../shared/plan/row-status.ts';
import { sendability } from '../../shared/plan/select.ts';
import { planSettleFailure } from '../../shared/plan/settle.ts';
import { unknownVersionRow } from '../../shared/plan/unknown-version.ts';
import {
  BUNDLE,
  claimedBy,
  createRow,
  deferred,
  intentRow,
  LEASE,
  ME,
  NOW,
  notes,
  OWNER,
  observe,
  receiptOf,
  updateRow,
} from '../plan/fixtures.ts';
import { OWNER as WORLD_OWNER, World } from '../support/harness.ts';

/** Fields a newer writer added: the top level, and inside every loose sub-object. */
const FUTURE = { futureField: { nested: [1, { deep: true }] }, legacyTag: 'v0-kept' };
const FUTURE_CLAIM = { leaseVersion: 2 };
const FUTURE_EVIDENCE = { lastStatus: 503 };
const FUTURE_WRITER = { build: 'abc123' };
const FUTURE_REQUEST = { priority: 'low' };

/** A row from the future: every known object carries a field this version does not know. */
function fromTheFuture(row: OutboxRow): OutboxRow {
  return {
    ...row,
    ...FUTURE,
    ...(row.claim ? { claim: { ...row.claim, ...FUTURE_CLAIM } } : {}),
    ...(row.evidence ? { evidence: { ...row.evidence, ...FUTURE_EVIDENCE } } : {}),
    ...(row.writer ? { writer: { ...row.writer, ...FUTURE_WRITER } } : {}),
    ...(row.request ? { request: { ...row.request, ...FUTURE_REQUEST } } : {}),
  };
}

/** Decoded the way the engine reads a stored value, so unknown keys must survive the parse. */
function decoded(row: OutboxRow): OutboxRow {
  const result = decodeRow(structuredClone(row));
  if (!result.ok) throw new Error(result.issues);
  return result.row;
}

const mine = decoded(fromTheFuture(claimedBy(updateRow(), ME, 2, NOW - 100)));
const settleCtx = { owner: OWNER, holderId: ME, fence: 2, now: NOW, nextAttemptAt: NOW + 1_000 };
const conflictCtx = { ...settleCtx, successorId: 'notes-0000000000000000000000s1', handler: notes };

function only(put: unknown[] | undefined): OutboxRow {
  expect(put).toHaveLength(1);
  return put![0] as OutboxRow;
}

/**
 * SPEC §2: "a rewrite of a row never drops a field it does not know". One case per planner
 * rewrite; `inPlace` rewrites keep the same row, so unknown fields of its claim, evidence,
 * writer and request survive too.
 */
const REWRITES: { planner: string; inPlace: boolean; rewrite: () => OutboxRow }[] = [
  {
    planner: 'planClaim',
    inPlace: true,
    rewrite: () => {
      const observed = decoded(fromTheFuture(deferred(updateRow(), 1)));
      const planned = planClaim(observed, observed, {
        owner: OWNER,
        holderId: ME,
        now: NOW,
        leaseMs: LEASE,
        bundle: BUNDLE,
      });
      if (planned.kind !== 'claim') throw new Error(planned.reason);
      return planned.row;
    },
  },
  ...(['transient', 'auth', 'permanent'] as const).map((kind) => ({
    planner: `planSettleFailure (${kind})`,
    inPlace: true,
    rewrite: () => {
      const planned = planSettleFailure(mine, mine, { kind, code: 'x' }, settleCtx);
      if (planned.kind !== 'apply') throw new Error('not mine');
      return only(planned.plan.put);
    },
  })),
  {
    planner: 'planConflictSuccessor (block policy)',
    inPlace: true,
    rewrite: () => {
      const planned = planConflictSuccessor(mine, mine, { currentRevision: 9 }, 412, {
        ...conflictCtx,
        handler: { ...notes, conflict: 'block' },
      });
      if (planned.kind === 'stale') throw new Error('stale');
      return only(planned.plan.put);
    },
  },
  {
    planner: 'planConflictSuccessor (rebase successor)',
    inPlace: false,
    rewrite: () => {
      const planned = planConflictSuccessor(mine, mine, { currentRevision: 9 }, 412, conflictCtx);
      if (planned.kind !== 'successor') throw new Error(planned.kind);
      return planned.successor;
    },
  },
  {
    planner: 'planEnqueue (merge into a queued row)',
    inPlace: false,
    rewrite: () => {
      const earlier = decoded(fromTheFuture(deferred(updateRow())));
      const planned = planEnqueue(
        {
          id: 'notes-00000000000000000000new1',
          collection: 'notes',
          kind: 'update',
          targetId: 'n_1',
          payload: { body: 'b' },
        },
        [observe(earlier)],
        undefined,
        { owner: OWNER, now: NOW, leaseMs: LEASE, maxRowBytes: 10_000, handler: notes },
      );
      if (planned.kind !== 'write') throw new Error(planned.kind);
      return only(planned.plan.put);
    },
  },
  {
    planner: 'planEnqueue (merge into an earlier intent)',
    inPlace: false,
    rewrite: () => {
      const create = claimedBy(createRow(), ME, 1);
      const earlier = decoded(fromTheFuture(intentRow(create.id)));
      const planned = planEnqueue(
        {
          id: 'notes-00000000000000000000new1',
          collection: 'notes',
          kind: 'update',
          targetId: create.targetId,
          payload: { body: 'b' },
        },
        [observe(create), observe(earlier)],
        { id: create.id, row: observe(create) },
        { owner: OWNER, now: NOW, leaseMs: LEASE, maxRowBytes: 10_000, handler: notes },
      );
      if (planned.kind !== 'write') throw new Error(planned.kind);
      return only(planned.plan.put);
    },
  },
  {
    planner: 'planIntentConversion (converted)',
    inPlace: false,
    rewrite: () => {
      const create = createRow();
      const intent = decoded(fromTheFuture(intentRow(create.id)));
      const plan = planIntentConversion([observe(intent)], create, receiptOf(create), notes, {
        now: NOW,
        owner: OWNER,
        newId: () => 'notes-0000000000000000000000u1',
      });
      return only(plan.put);
    },
  },
  {
    planner: 'planIntentConversion (blocked successor_unprepared)',
    inPlace: true,
    rewrite: () => {
      const create = createRow();
      // An intent that already met a missing receipt once carries evidence (§8).
      const marked = intentRow(create.id, {
        evidence: { attemptCount: 0, lastErrorCode: 'predecessor_receipt_unknown' },
      });
      const intent = decoded(fromTheFuture(marked));
      const plan = planIntentConversion([observe(intent)], create, receiptOf(create), undefined, {
        now: NOW,
        owner: OWNER,
        newId: () => 'notes-0000000000000000000000u1',
      });
      return only(plan.put);
    },
  },
];

describe('unknown fields survive every planner rewrite (SPEC §2)', () => {
  it('decoding keeps every unknown field, at every level', () => {
    const raw = fromTheFuture(claimedBy(updateRow(), ME, 1));
    expect(decodeRow(structuredClone(raw))).toEqual({ ok: true, row: raw, raw });
  });

  it.each(REWRITES)('$planner keeps the unknown top-level fields', ({ rewrite }) => {
    expect(rewrite()).toMatchObject(FUTURE);
  });

  it.each(REWRITES.filter((r) => r.inPlace))(
    '$planner keeps the unknown fields inside claim, evidence, writer and request',
    ({ rewrite }) => {
      const row = rewrite();
      for (const [part, future] of [
        ['claim', FUTURE_CLAIM],
        ['evidence', FUTURE_EVIDENCE],
        ['writer', FUTURE_WRITER],
        ['request', FUTURE_REQUEST],
      ] as const) {
        if (row[part] !== undefined) expect(row[part], part).toMatchObject(future);
      }
      expect(row.claim ?? row.evidence, 'a sub-object was rewritten').toBeDefined();
    },
  );
});

/** SPEC §2 / G7: a value that fails to parse is kept and quarantined, never thrown away. */
describe('seq (SPEC §6.1)', () => {
  it.each([
    { name: 'a row with a seq', raw: { ...updateRow(), seq: 7 } },
    { name: 'a row without one (a legacy tab, an older bundle)', raw: updateRow() },
  ])('$name decodes as it is stored', ({ raw }) => {
    expect(decodeRow(structuredClone(raw))).toMatchObject({ ok: true, row: raw });
  });
});

describe('a stored value that fails to parse', () => {
  const good = updateRow();
  it.each([
    { name: 'a row without an id', raw: { ...good, id: undefined }, id: 'undefined' },
    {
      name: 'a row whose savedAt is a string',
      raw: { ...good, savedAt: 'yesterday' },
      id: good.id,
    },
    { name: 'a row whose state is a number', raw: { ...good, state: 3 }, id: good.id },
    {
      name: 'a row whose request lacks its fingerprint',
      raw: { ...good, request: { ...good.request, fingerprint: undefined } },
      id: good.id,
    },
    {
      name: 'a row whose claim fence is negative',
      raw: { ...good, claim: { holderId: 'x', expiresAt: 1, fence: -1 } },
      id: good.id,
    },
    { name: 'a row whose seq is zero', raw: { ...good, seq: 0 }, id: good.id },
    { name: 'a row whose seq is a fraction', raw: { ...good, seq: 1.5 }, id: good.id },
    { name: 'a string', raw: 'not a row', id: 'undefined' },
    { name: 'null', raw: null, id: 'undefined' },
  ])('$name decodes as ok:false with the raw value kept', ({ raw, id }) => {
    const stored = JSON.parse(JSON.stringify(raw ?? null)) as unknown;
    const result = decodeRow(stored);
    expect(result).toMatchObject({ ok: false, id });
    if (result.ok) return;
    expect(result.raw).toBe(stored);
    expect(result.issues).not.toBe('');
  });

  it('is quarantined as blocked / row_corrupt with the raw value under `raw`', () => {
    const raw = { ...good, savedAt: 'yesterday', futureField: 1 };
    const bad = decodeRow(raw);
    if (bad.ok) throw new Error('should not parse');
    const plan = planQuarantine(bad, { owner: OWNER, now: NOW });
    expect(plan.expected).toEqual([{ id: good.id, row: raw }]);
    const row = only(plan.put);
    expect(row).toMatchObject({
      id: good.id,
      owner: OWNER,
      collection: 'notes',
      kind: 'update',
      targetId: 'n_1',
      savedAt: NOW,
      state: 'blocked',
      blockedAt: NOW,
      blockedCode: 'row_corrupt',
      raw,
    });
    expect(row.blockedDetail).toContain('savedAt');
  });

  it('stored under a number key, it moves to the string form of that key, the raw value kept', () => {
    const raw = { ...good, id: 5 };
    const bad = decodeRow(raw);
    if (bad.ok) throw new Error('should not parse');
    const plan = planQuarantine(bad, { owner: OWNER, now: NOW });
    expect(plan.expected).toEqual([
      { id: 5, row: raw },
      { id: '5', row: null },
    ]);
    expect(plan.delete).toEqual([5]);
    expect(decoded(only(plan.put))).toMatchObject({ id: '5', blockedCode: 'row_corrupt', raw });
  });

  it('once quarantined it parses, and is shown as blocked and never sent', () => {
    const bad = decodeRow({ ...good, state: 3 });
    if (bad.ok) throw new Error('should not parse');
    const row = decoded(only(planQuarantine(bad, { owner: OWNER, now: NOW }).put));
    const ctx = { now: NOW, leaseMs: LEASE };
    expect(sendability(row, { ...ctx, force: true }, () => 'absent')).toBe('blocked');
    expect(rowStatus(row, ctx, () => 'absent')).toBe('blocked');
  });

  it('a flush quarantines it and still sends the rows after it (G7)', async () => {
    const world = await World.create('memory');
    try {
      const a = await world.holder('A');
      const corrupt = { ...good, owner: WORLD_OWNER, savedAt: NOW - 5, state: 7 };
      await a.store.replace({
        owner: WORLD_OWNER,
        expected: [{ id: good.id, row: null }],
        put: [corrupt],
        reason: 'legacy',
      });
      const created = await a.api.enqueue({
        collection: 'notes',
        kind: 'create',
        payload: { title: 'x' },
      });
      const report = await a.api.flush();
      expect(report.succeeded).toBe(1);
      expect(world.server.effectsFor(created.requestId!)).toBe(1);
      expect(await a.store.get(good.id)).toMatchObject({
        state: 'blocked',
        blockedCode: 'row_corrupt',
        raw: corrupt,
      });
    } finally {
      world.close();
    }
  });
});

/** SPEC §2: an unknown `state` value is not sendable, not deleted, shown as unknown. */
describe('a row in an unknown state', () => {
  const row = decoded(fromTheFuture(updateRow({ state: 'archived' })));
  const ctx = { now: NOW, leaseMs: LEASE };

  it.each([
    { what: 'parses, keeping its state', actual: () => row.state, expected: 'archived' },
    {
      what: 'is not sendable, even forced',
      actual: () => sendability(row, { ...ctx, force: true }, () => 'absent'),
      expected: 'unknown_state',
    },
    {
      what: 'is shown as unknown',
      actual: () => rowStatus(row, ctx, () => 'absent'),
      expected: 'unknown',
    },
    {
      what: 'is never claimed',
      actual: () =>
        planClaim(row, row, {
          owner: OWNER,
          holderId: ME,
          now: NOW,
          leaseMs: LEASE,
          bundle: BUNDLE,
        }),
      expected: { kind: 'skip', reason: 'not_queued' },
    },
  ])('$what', ({ actual, expected }) => {
    expect(actual()).toEqual(expected);
  });
});

/** SPEC §17: a row of a format version this bundle does not know is a newer bundle's to send. */
describe('a row of an unknown format version', () => {
  const newer = { ...updateRow(), v: 2, request: { shape: 'of v2' } };
  const decodedNewer = decodeRow(structuredClone(newer));
  if (decodedNewer.ok) throw new Error('a v2 row must not decode as v1');
  const seen = unknownVersionRow(decodedNewer);
  const ctx = { now: NOW, leaseMs: LEASE };

  it.each([
    {
      rule: 'it decodes as not v1, marked as of an unknown version, not corrupt',
      check: () => expect(decodedNewer.unknownVersion).toBe(true),
    },
    {
      rule: 'it is never sendable',
      check: () =>
        expect(sendability(seen.row, { ...ctx, force: true }, () => 'absent')).toBe(
          'unknown_state',
        ),
    },
    {
      rule: 'it is shown as unknown',
      check: () => expect(rowStatus(seen.row, ctx, () => 'absent')).toBe('unknown'),
    },
    {
      rule: 'it is never claimed',
      check: () =>
        expect(
          planClaim(seen.row, seen.raw, {
            owner: OWNER,
            holderId: ME,
            now: NOW,
            leaseMs: LEASE,
            bundle: BUNDLE,
          }),
        ).toMatchObject({ kind: 'skip' }),
    },
    {
      rule: 'a new edit of its record is its successor, never merged into it',
      check: () => {
        const planned = planEnqueue(
          {
            id: 'notes-00000000000000000000new1',
            collection: 'notes',
            kind: 'update',
            targetId: 'n_1',
            payload: { b: 1 },
          },
          [seen],
          undefined,
          { owner: OWNER, now: NOW, leaseMs: LEASE, maxRowBytes: 10_000, handler: notes },
        );
        expect(planned).toMatchObject({ kind: 'write', result: { outcome: 'successor' } });
        if (planned.kind === 'write') expect(planned.plan.delete).toEqual([]);
      },
    },
  ])('$rule', ({ check }) => check());
});

/** SPEC §17: only a whole `v` above the bundle's is a newer format; any other `v` is corrupt. */
describe('what a row’s v says', () => {
  it.each([
    { v: 2, reads: 'a newer format' },
    { v: 7, reads: 'a newer format' },
    { v: 'one', reads: 'corrupt' },
    { v: '2', reads: 'corrupt' },
    { v: 1.5, reads: 'corrupt' },
    { v: -1, reads: 'corrupt' },
    { v: 0, reads: 'corrupt' },
    { v: null, reads: 'corrupt' },
    { v: { major: 2 }, reads: 'corrupt' },
    { v: Number.POSITIVE_INFINITY, reads: 'corrupt' },
  ])('v = $v reads as $reads', ({ v, reads }) => {
    const decoded = decodeRow({ ...updateRow(), v, claim: { holderId: 1, fence: 'x' } });
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.unknownVersion === true ? 'a newer format' : 'corrupt').toBe(reads);
    if (reads === 'corrupt') expect(decoded.issues).toMatch(/^v: .* is not a format version$/);
  });
});
