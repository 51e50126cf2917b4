import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { isRecordClear, isRowInFlight, wasAttempted } from '../../shared/plan/in-flight.ts';
import {
  BUNDLE,
  claimedBy,
  deferred,
  LEASE,
  legacySending,
  ME,
  NOW,
  OTHER,
  updateRow,
  without,
} from './fixtures.ts';

/** SPEC §4 "In flight": (1) a v1 writer's live claim; otherwise (2) legacy `sending` within the lease. */
describe('isRowInFlight (SPEC §4)', () => {
  const base = updateRow();
  const cases: { name: string; row: OutboxRow; inFlight: boolean }[] = [
    { name: 'a queued row that was never claimed is not in flight', row: base, inFlight: false },
    {
      name: '(1) a v1 row whose claim expires after now is in flight',
      row: claimedBy(base, OTHER, 1, NOW - 1),
      inFlight: true,
    },
    {
      name: '(1) a v1 claim that expires exactly now is no longer in flight',
      row: {
        ...base,
        state: 'sending',
        claim: { holderId: OTHER, expiresAt: NOW, fence: 1 },
        writer: { bundle: BUNDLE, at: 0 },
      },
      inFlight: false,
    },
    {
      name: '(1) a live claim without a writer stamp does not count as a v1 claim',
      row: {
        ...base,
        state: 'sending',
        claim: { holderId: OTHER, expiresAt: NOW + LEASE, fence: 1 },
      },
      inFlight: false,
    },
    {
      name: '(1) a settled row keeps its expired claim and is not in flight',
      row: deferred(base, 2),
      inFlight: false,
    },
    ...(['queued', 'held', 'blocked'] as const).map((state) => ({
      name: `(1) a ${state} row whose expired-by-writing claim looks unexpired to a slower clock is not in flight`,
      row: {
        ...deferred(base, 1),
        state,
        claim: { holderId: OTHER, expiresAt: NOW + 5_000, fence: 1 },
      },
      inFlight: false,
    })),
    {
      name: '(2) a legacy sending row sent just now is in flight',
      row: legacySending(base, NOW),
      inFlight: true,
    },
    {
      name: '(2) a legacy sending row one millisecond inside the lease is in flight',
      row: legacySending(base, NOW - LEASE + 1),
      inFlight: true,
    },
    {
      name: '(2) a legacy sending row whose lease has just run out is not in flight',
      row: legacySending(base, NOW - LEASE),
      inFlight: false,
    },
    {
      name: '(2) a legacy sending row without sentAt is not in flight',
      row: without(legacySending(base, NOW), 'sentAt'),
      inFlight: false,
    },
    {
      name: '(2) a queued row with a fresh sentAt is not in flight',
      row: { ...base, sentAt: NOW },
      inFlight: false,
    },
    {
      name: '(2) a v1 row with an expired claim that a legacy tab set sending again is in flight',
      row: {
        ...deferred(base, 2),
        state: 'sending',
        sentAt: NOW - 10,
      },
      inFlight: true,
    },
  ];

  it.each(cases)('$name', ({ row, inFlight }) => {
    expect(isRowInFlight(row, NOW, LEASE)).toBe(inFlight);
  });
});

/** Whether a row was ever handed to the network decides merge versus intent (§6, §8). */
describe('wasAttempted', () => {
  const base = updateRow();
  it.each([
    { name: 'a never-claimed queued row was not attempted', row: base, attempted: false },
    { name: 'a claimed row was attempted', row: claimedBy(base, OTHER, 1), attempted: true },
    { name: 'a deferred row was attempted', row: deferred(base), attempted: true },
    {
      name: 'a legacy row with sentAt was attempted',
      row: legacySending(base, NOW),
      attempted: true,
    },
  ])('$name', ({ row, attempted }) => {
    expect(wasAttempted(row)).toBe(attempted);
  });
});

/**
 * SPEC §6.1 "A row is sent only when ... no other row of its record is in flight by any holder,
 * the legacy fallback included": the last look before the wire, on the record read again after
 * the claim — a legacy tab, which knows nothing of claims (§17), may have sent a row meanwhile.
 */
describe('isRecordClear (SPEC §6.1)', () => {
  const mine = claimedBy(updateRow(), ME, 1, NOW - 50);
  const other = updateRow({ id: 'notes-000000000000000000000002', seq: 2 });
  const legacy = legacySending(updateRow({ id: 'v0-row-1' }), NOW);
  it.each([
    { name: 'the record holds only the claimed row', record: [mine], clear: true },
    { name: 'the other rows are queued', record: [mine, other], clear: true },
    {
      name: 'a legacy tab put another row of the record on the wire since the claim',
      record: [mine, legacySending(other, NOW - 10)],
      clear: false,
    },
    {
      name: 'a legacy tab wrote a new row of the record and sent it at once',
      record: [legacy, mine],
      clear: false,
    },
    {
      name: 'a legacy row whose lease has run out is no longer in flight (§4 rule 2)',
      record: [mine, legacySending(other, NOW - LEASE)],
      clear: true,
    },
    {
      name: "another holder's live claim on a row of the record",
      record: [mine, claimedBy(other, OTHER, 1, NOW - 10)],
      clear: false,
    },
    {
      name: 'a settled row of the record keeps its expired claim and holds nothing',
      record: [mine, deferred(other)],
      clear: true,
    },
  ])('$name: clear is $clear', ({ record, clear }) => {
    expect(isRecordClear(record, mine, NOW, LEASE)).toBe(clear);
  });
});
