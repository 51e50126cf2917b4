import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deepEqual } from '../../shared/model/json.ts';
import { inspectJson, MAX_VALUE_DEPTH } from '../../shared/model/json-bounds.ts';
import { decodeRow } from '../../shared/model/row.ts';
import { unreadableValue } from '../../shared/model/store.ts';
import { corruptInFlight, planQuarantine } from '../../shared/plan/quarantine.ts';
import { matchesObservation } from '../../shared/store/commit.ts';
import { cyclic, HOSTILE, nested } from '../support/hostile.ts';
import { LEASE, NOW, OWNER, updateRow } from './fixtures.ts';

describe('inspecting values before anything recurses into them (G7)', () => {
  it.each(HOSTILE)('reports $name as $code, with where, without throwing', ({ value, code }) => {
    const problem = inspectJson({ payload: { items: [value()] } });
    expect(problem?.code).toBe(code);
    expect(problem?.path.startsWith('payload.items.0')).toBe(true);
  });

  it.each([
    { name: 'null, booleans, numbers and strings', value: [null, true, 0, -1.5, 'x'] },
    { name: 'an object without prototype', value: Object.assign(Object.create(null), { a: 1 }) },
    { name: 'an object member that is undefined (JSON drops it)', value: { a: undefined } },
    {
      name: 'a value shared twice without a cycle',
      value: (() => {
        const s = { a: 1 };
        return { x: s, y: [s, s] };
      })(),
    },
    { name: `a value nested exactly ${MAX_VALUE_DEPTH} levels`, value: nested(MAX_VALUE_DEPTH) },
  ])('accepts $name', ({ value }) => {
    expect(inspectJson(value)).toBeUndefined();
  });
});

describe('comparing stored values that may be hostile (SPEC §3 replace)', () => {
  it('compares cyclic values without overflowing: same shape equal, other content not', () => {
    const a = cyclic();
    const b = cyclic();
    expect(deepEqual(a, b)).toBe(true);
    b.title = 'other';
    expect(deepEqual(a, b)).toBe(false);
  });

  it('compares values nested 100,000 levels deep', () => {
    expect(deepEqual(nested(100_000), nested(100_000))).toBe(true);
    expect(deepEqual(nested(100_000), nested(99_999))).toBe(false);
  });

  it('tells Dates apart, and a Date from a plain object', () => {
    expect(deepEqual(new Date(1), new Date(1))).toBe(true);
    expect(deepEqual(new Date(1), new Date(2))).toBe(false);
    expect(deepEqual(new Date(1), {})).toBe(false);
  });

  it('agrees with a plain recursive comparison on ordinary JSON', () => {
    const naive = (x: unknown, y: unknown) => JSON.stringify(x) === JSON.stringify(y);
    fc.assert(
      fc.property(fc.json(), fc.json(), (x, y) => {
        const [a, b] = [JSON.parse(x), JSON.parse(y)];
        expect(deepEqual(a, structuredClone(a))).toBe(true);
        // Key order differs between equal objects only when built differently: not here.
        if (naive(a, b)) expect(deepEqual(a, b)).toBe(true);
      }),
    );
  });

  it('matches an unreadable stand-in to what IndexedDB reads for it (null), and to nothing else', () => {
    const stand = unreadableValue('r1', OWNER, 5);
    expect(matchesObservation(null, stand)).toBe(true);
    expect(matchesObservation(undefined, stand)).toBe(false);
    expect(matchesObservation(updateRow(), stand)).toBe(false);
  });
});

describe('decoding a hostile stored value never throws, and it is quarantined whole (SPEC §2, G7)', () => {
  const stored = (payload: unknown) => ({ ...updateRow(), payload });

  it.each(HOSTILE)('a row whose payload is $name is not a row', ({ value, code }) => {
    const raw = stored(value());
    const decoded = decodeRow(raw);
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.issues).toContain(code === 'invalid_value' ? 'payload' : code);
    const plan = planQuarantine(decoded, { owner: OWNER, now: NOW });
    // The raw value is kept as it is, cycles and all.
    expect((plan.put![0] as { raw: unknown }).raw).toBe(raw);
    expect(plan.put![0]).toMatchObject({
      state: 'blocked',
      blockedCode: 'row_corrupt',
      id: raw.id,
    });
  });

  it('a row the store could not read is quarantined by its key, saying its value is gone', () => {
    const stand = unreadableValue('notes-00000000000000000000000d', OWNER, 7);
    const decoded = decodeRow(stand);
    expect(decoded).toMatchObject({
      ok: false,
      id: 'notes-00000000000000000000000d',
      owner: OWNER,
    });
    if (decoded.ok) return;
    const plan = planQuarantine(decoded, { owner: OWNER, now: NOW });
    expect(plan.expected).toEqual([{ id: 'notes-00000000000000000000000d', row: stand }]);
    expect(plan.put![0]).toMatchObject({
      state: 'blocked',
      blockedCode: 'row_corrupt',
      rawUnavailable: expect.stringContaining('could not read'),
    });
    expect(plan.put![0]).not.toHaveProperty('raw');
  });

  it('any structured value decodes or is refused, never throws', () => {
    fc.assert(
      fc.property(
        fc.anything({ withMap: true, withSet: true, withDate: true, withTypedArray: true }),
        (value) => {
          expect(() => decodeRow(value)).not.toThrow();
          expect(() => decodeRow(stored(value))).not.toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('a value that failed to parse while on the wire holds its record until its lease ends (SPEC §4, §6.1, G4)', () => {
  const sending = {
    v: 1,
    id: 'notes-000000000000000000000bad',
    owner: OWNER,
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    state: 'sending',
    evidence: { attemptCount: -1 },
  };
  const record = { collection: 'notes', targetId: 'n_1' };

  it.each([
    {
      name: 'a live claim',
      raw: { ...sending, claim: { holderId: 'A', expiresAt: NOW + 10, fence: 1 } },
      hold: { until: NOW + 10, record },
    },
    {
      name: 'a legacy send within the lease',
      raw: { ...sending, sentAt: NOW - 10 },
      hold: { until: NOW - 10 + LEASE, record },
    },
    {
      name: 'a live claim, the record unreadable',
      raw: { ...sending, targetId: 7, claim: { expiresAt: NOW + 10 } },
      hold: { until: NOW + 10 },
    },
    {
      name: 'a claim whose lease ended',
      raw: { ...sending, claim: { holderId: 'A', expiresAt: NOW, fence: 1 } },
      hold: undefined,
    },
    {
      name: 'a lease no holder took (ending past twice the lease)',
      raw: { ...sending, claim: { holderId: 'A', expiresAt: NOW + 2 * LEASE + 1, fence: 1 } },
      hold: undefined,
    },
    {
      name: 'a claim of the wrong shape',
      raw: { ...sending, claim: { expiresAt: 'soon' } },
      hold: undefined,
    },
    {
      name: 'a queued row',
      raw: { ...sending, state: 'queued', claim: { expiresAt: NOW + 10 } },
      hold: undefined,
    },
    { name: 'not an object', raw: 'sending', hold: undefined },
  ])('$name: $hold', ({ raw, hold }) => {
    expect(corruptInFlight(raw, NOW, LEASE)).toEqual(hold);
  });
});
