import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNING } from '../../shared/core/tuning.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import { claimExpiry, DEFAULT_LEASE_MS, isLeaseLapsed, leaseEnd } from '../../shared/plan/lease.ts';
import { BUNDLE, claimedBy, LEASE, legacySending, NOW, OTHER, updateRow } from './fixtures.ts';

/** SPEC §4 table: `claim.expiresAt` is now plus the lease, 10 s unless configured. */
describe('the lease length', () => {
  it('defaults to 10 s, the default every holder reads', () => {
    expect(DEFAULT_LEASE_MS).toBe(10_000);
    expect(DEFAULT_TUNING.leaseMs).toBe(DEFAULT_LEASE_MS);
  });

  it('a claim taken now expires one lease later', () => {
    expect(claimExpiry(NOW, LEASE)).toBe(NOW + LEASE);
  });
});

/** SPEC §4 "In flight": when the lease a row is sent under ends, for a v1 or a legacy v0 writer. */
describe('leaseEnd', () => {
  const base = updateRow();
  const cases: { name: string; row: OutboxRow; end: number }[] = [
    { name: 'a row never claimed nor sent has no lease', row: base, end: -Infinity },
    {
      name: 'a v1 claim ends at its expiresAt',
      row: claimedBy(base, OTHER, 1, NOW - 1_000),
      end: NOW - 1_000 + LEASE,
    },
    {
      name: 'a legacy v0 send ends one lease after its sentAt',
      row: legacySending(base, NOW - 2_000),
      end: NOW - 2_000 + LEASE,
    },
    {
      name: 'a v0 tab that rewrote a v1 row: the later of the two',
      row: {
        ...base,
        state: 'sending',
        sentAt: NOW,
        claim: { holderId: OTHER, expiresAt: NOW - 5_000, fence: 1 },
        writer: { bundle: BUNDLE, at: NOW - 15_000 },
      },
      end: NOW + LEASE,
    },
    {
      name: 'a claim without a writer stamp is no v1 claim: only sentAt counts',
      row: {
        ...base,
        state: 'sending',
        sentAt: NOW - 1_000,
        claim: { holderId: OTHER, expiresAt: NOW + 60_000, fence: 1 },
      },
      end: NOW - 1_000 + LEASE,
    },
  ];
  it.each(cases)('$name', ({ row, end }) => {
    expect(leaseEnd(row, LEASE)).toBe(end);
  });
});

/** SPEC §4 "No request leaves after its lease": a claimed request that may no longer leave. */
describe('isLeaseLapsed', () => {
  const leaveBy = NOW + LEASE - LEASE * 0.2;
  it.each([
    {
      name: 'just claimed, well before its deadline: it goes',
      sentAt: NOW,
      now: NOW,
      lapsed: false,
    },
    {
      name: 'it waited exactly half a lease for a slot: it still goes',
      sentAt: NOW,
      now: NOW + LEASE / 2,
      lapsed: false,
    },
    {
      name: 'it waited more than half a lease for a slot: it goes back to the queue',
      sentAt: NOW,
      now: NOW + LEASE / 2 + 1,
      lapsed: true,
    },
    {
      name: 'its deadline came: it goes back to the queue',
      sentAt: NOW - LEASE,
      now: leaveBy,
      lapsed: true,
    },
  ])('$name', ({ sentAt, now, lapsed }) => {
    expect(isLeaseLapsed({ sentAt }, now, LEASE, leaveBy)).toBe(lapsed);
  });
});
