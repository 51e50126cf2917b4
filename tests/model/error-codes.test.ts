import { describe, expect, it } from 'vitest';
import { ERROR_CODE_TRAITS, ERROR_CODES, traitsOf } from '../../shared/model/error-codes.ts';
import { appliedNothing } from '../../shared/plan/attempt-outcome.ts';

describe('the one table of error codes', () => {
  it('gives every code a hint, and traits only to known codes', () => {
    for (const hint of Object.values(ERROR_CODES)) expect(hint.length).toBeGreaterThan(10);
    for (const code of Object.keys(ERROR_CODE_TRAITS))
      expect(Object.hasOwn(ERROR_CODES, code)).toBe(true);
  });

  it.each([
    // The server refused before or instead of applying.
    ['http_503', true],
    ['http_400', true],
    ['http_429', true],
    ['fingerprint_mismatch', true],
    ['revision_conflict', true],
    ['conflict_storm', true],
    ['successor_persist_failed', true],
    // Nothing left the device.
    ['auth_required', true],
    ['origin_not_allowed', true],
    ['lease_lapsed', true],
    ['record_busy', true],
    ['flush_stopped', true],
    // Intent rows carry no request yet (§8).
    ['successor_unprepared', true],
    ['predecessor_receipt_unknown', true],
    // May follow an effect (§6).
    ['http_500', false],
    ['http_502', false],
    ['http_504', false],
    ['request_in_progress', false],
    ['network', false],
    ['timeout', false],
    ['handler_failed', false],
    ['an_apps_own_code', false],
  ])('says an attempt that ended with %s applied nothing: %s', (code, expected) => {
    expect(appliedNothing(code)).toBe(expected);
  });

  it('marks as unanswered exactly the attempts no server answered (§12)', () => {
    const unanswered = Object.keys(ERROR_CODES).filter(
      (code) => traitsOf(code)?.unanswered === true,
    );
    expect(unanswered.sort()).toEqual(['flush_stopped', 'lease_lapsed', 'network', 'timeout']);
  });

  it('marks as permanent the enqueue failures a retry cannot cure', () => {
    const permanent = Object.keys(ERROR_CODES).filter((code) => traitsOf(code)?.permanent === true);
    expect(permanent.sort()).toEqual([
      'invalid_id',
      'invalid_intent',
      'row_too_large',
      'target_deleted',
    ]);
  });

  it('knows nothing of codes outside the table, even inherited names', () => {
    expect(traitsOf('http_500')).toBeUndefined();
    expect(traitsOf('toString')).toBeUndefined();
  });
});
