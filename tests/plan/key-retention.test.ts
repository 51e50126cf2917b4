import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { planClaim } from '../../shared/plan/claim.ts';
import {
  ASSUMED_RETENTION_MS,
  firstAttemptOf,
  keyLifetime,
  planKeyAge,
} from '../../shared/plan/key-retention.ts';
import {
  abandoned,
  BUNDLE,
  createRow,
  deferred,
  LEASE,
  legacySending,
  ME,
  NOW,
  OWNER,
  unanswered,
  updateRow,
} from './fixtures.ts';

const DAY = 24 * 60 * 60 * 1000;

/** A row whose current key first left `daysAgo` days before `NOW`. */
function aged(row: OutboxRow, daysAgo: number): OutboxRow {
  return { ...row, evidence: { ...row.evidence!, firstAttemptAt: NOW - daysAgo * DAY } };
}

/** A row retried under a new key after the server forgot its old one (§15): nothing counted. */
function reissued(): OutboxRow {
  return {
    ...createRow(),
    evidence: { attemptCount: 0, lastErrorCode: 'retention_exceeded', mayHaveApplied: true },
  };
}

/** SPEC §15 "A key is only safe while the server remembers it", as a table. */
describe('planKeyAge: a key is resent only while the server remembers it (SPEC §15)', () => {
  it.each([
    {
      case: 'a row never attempted goes at any age',
      row: createRow(),
      retention: undefined,
      plan: 'send',
    },
    {
      case: 'a row answered with a definite "not applied" (503) goes at any age',
      row: aged(deferred(updateRow()), 30),
      retention: undefined,
      plan: 'send',
    },
    {
      case: 'an unknown outcome five days old is resent under its key (nothing published: 6 days)',
      row: aged(unanswered(createRow()), 5),
      retention: undefined,
      plan: 'send',
    },
    {
      case: 'an unknown outcome six days old asks the receipt lookup first (nothing published)',
      row: aged(unanswered(createRow()), 6),
      retention: undefined,
      plan: 'ask',
    },
    {
      case: 'an unknown outcome eight days old asks the lookup first (a 7-day retention)',
      row: aged(unanswered(updateRow(), 'http_500'), 8),
      retention: 7 * DAY,
      plan: 'ask',
    },
    {
      case: 'an unknown outcome eight days old is resent where the server keeps keys 30 days',
      row: aged(unanswered(updateRow(), 'timeout'), 8),
      retention: 30 * DAY,
      plan: 'send',
    },
    {
      case: 'a row whose holder died mid-send (still sending) is an unknown outcome too',
      row: aged(abandoned(createRow()), 8),
      retention: undefined,
      plan: 'ask',
    },
    {
      case: 'a row a legacy tab sent, with no first attempt recorded, is dated by its savedAt',
      row: { ...legacySending(createRow(), NOW - 8 * DAY), savedAt: NOW - 8 * DAY },
      retention: undefined,
      plan: 'ask',
    },
    {
      case: 'a row re-issued under a new key (retention_exceeded) that has not left goes at any age',
      row: { ...reissued(), savedAt: NOW - 30 * DAY },
      retention: undefined,
      plan: 'send',
    },
    {
      case: 'a re-issued row a legacy tab sent and put back (its sentAt left, no attempt counted) asks first, dated by its savedAt',
      row: { ...reissued(), savedAt: NOW - 8 * DAY, sentAt: NOW - 8 * DAY + 60_000 },
      retention: undefined,
      plan: 'ask',
    },
    {
      case: 'a short retention (one hour) keeps six sevenths of itself',
      row: {
        ...unanswered(createRow()),
        evidence: { attemptCount: 1, mayHaveApplied: true, firstAttemptAt: NOW - 52 * 60_000 },
      },
      retention: 60 * 60_000,
      plan: 'ask',
    },
  ] satisfies {
    case: string;
    row: OutboxRow;
    retention: number | undefined;
    plan: 'send' | 'ask';
  }[])('$case', ({ row, retention, plan }) => {
    expect(planKeyAge(row, { now: NOW, retentionMs: retention })).toBe(plan);
  });

  it('allows a key the retention less one day, six days when nothing was published', () => {
    expect(keyLifetime(undefined)).toBe(6 * DAY);
    expect(keyLifetime(ASSUMED_RETENTION_MS)).toBe(6 * DAY);
    expect(keyLifetime(30 * DAY)).toBe(29 * DAY);
    expect(keyLifetime(7 * 60 * 60_000)).toBe(6 * 60 * 60_000);
  });

  it('dates a key by its first claim, which later claims keep and a never-sent row has none of', () => {
    const ctx = { owner: OWNER, holderId: ME, now: NOW, leaseMs: LEASE, bundle: BUNDLE };
    const first = planClaim(createRow(), createRow(), ctx);
    if (first.kind !== 'claim') throw new Error('expected a claim');
    expect(first.row.evidence?.firstAttemptAt).toBe(NOW);
    const again = planClaim(aged(unanswered(createRow()), 2), {}, { ...ctx, now: NOW + LEASE });
    if (again.kind !== 'claim') throw new Error('expected a claim');
    expect(again.row.evidence?.firstAttemptAt).toBe(NOW - 2 * DAY);
    expect(firstAttemptOf(createRow())).toBeUndefined();
  });

  it('dates a re-issued key from the row’s savedAt once a legacy tab sent it, and from the claim while none did (G2)', () => {
    const ctx = { owner: OWNER, holderId: ME, now: NOW, leaseMs: LEASE, bundle: BUNDLE };
    const savedAt = NOW - 10 * DAY;
    const sentByLegacy = planClaim({ ...reissued(), savedAt, sentAt: savedAt + 60_000 }, {}, ctx);
    if (sentByLegacy.kind !== 'claim') throw new Error('expected a claim');
    expect(sentByLegacy.row.evidence?.firstAttemptAt).toBe(savedAt);
    const unsent = planClaim({ ...reissued(), savedAt }, {}, ctx);
    if (unsent.kind !== 'claim') throw new Error('expected a claim');
    expect(unsent.row.evidence?.firstAttemptAt).toBe(NOW);
  });

  it('dates a key anew at the claim after attempts that all applied nothing: an old first attempt answered 503, or stopped before it left, left the server nothing to forget (G4)', () => {
    const ctx = { owner: OWNER, holderId: ME, now: NOW, leaseMs: LEASE, bundle: BUNDLE };
    for (const code of ['http_503', 'flush_stopped']) {
      const refused = {
        ...createRow(),
        evidence: { attemptCount: 1, lastErrorCode: code, firstAttemptAt: NOW - 30 * DAY },
      };
      const claimed = planClaim(refused, {}, ctx);
      if (claimed.kind !== 'claim') throw new Error('expected a claim');
      expect(claimed.row.evidence?.firstAttemptAt).toBe(NOW);
      // Its answer lost now, the key is young: it is resent, not blocked as forgotten.
      const lost = {
        ...claimed.row,
        state: 'queued' as const,
        claim: undefined,
        sentAt: undefined,
        evidence: { ...claimed.row.evidence!, mayHaveApplied: true, lastErrorCode: 'timeout' },
      };
      expect(planKeyAge(lost, { now: NOW + 60_000, retentionMs: undefined })).toBe('send');
    }
  });
});
