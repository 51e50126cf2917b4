import { describe, expect, it } from 'vitest';
import type { ConflictLedgerEntry } from '../../shared/model/store.ts';
import { withHistoryExpiry } from '../../shared/plan/conflict-ledger.ts';

const DAY = 24 * 60 * 60 * 1000;

const entry: ConflictLedgerEntry = {
  successorId: 'notes-s',
  originalId: 'notes-o',
  owner: 'user-1',
  collection: 'notes',
  targetId: 'n_1',
  overwrittenRevision: 2,
  finalRevision: 3,
  lineageLength: 0,
  copy: { local: 'present', base: 'absent', remote: 'snapshot' },
  recordedAt: 1_000,
  settledAt: 2_000,
  historyRef: {
    kind: 'record_history',
    collection: 'notes',
    recordId: 'n_1',
    supersededRevision: 2,
    access: 'server_lookup',
  },
};

/** SPEC §10.1, §15: an entry says when the server forgets what its resend overwrote. */
describe('withHistoryExpiry', () => {
  it.each([
    {
      case: 'a day after, with nothing published (7 days assumed)',
      now: 1_000 + DAY,
      retention: undefined,
      expiresAt: 1_000 + 7 * DAY,
      expired: false,
    },
    {
      case: 'eight days after, with nothing published',
      now: 1_000 + 8 * DAY,
      retention: undefined,
      expiresAt: 1_000 + 7 * DAY,
      expired: true,
    },
    {
      case: 'eight days after, where the server keeps 30 days',
      now: 1_000 + 8 * DAY,
      retention: 30 * DAY,
      expiresAt: 1_000 + 30 * DAY,
      expired: false,
    },
    {
      case: 'at the very end of the retention',
      now: 1_000 + 7 * DAY,
      retention: 7 * DAY,
      expiresAt: 1_000 + 7 * DAY,
      expired: true,
    },
  ])('$case', ({ now, retention, expiresAt, expired }) => {
    expect(withHistoryExpiry(entry, { now, retentionMs: retention })).toEqual({
      ...entry,
      historyExpiresAt: expiresAt,
      historyExpired: expired,
    });
  });

  it('leaves an entry whose server keeps no history as it is', () => {
    const none = { ...entry, historyRef: null };
    expect(withHistoryExpiry(none, { now: 10 * DAY, retentionMs: undefined })).toBe(none);
  });
});
