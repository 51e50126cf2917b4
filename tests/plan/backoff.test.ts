import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_BACKOFF } from '../../shared/plan/backoff.ts';

describe('backoffDelay', () => {
  it.each([
    { attempt: 1, ceiling: 1_000 },
    { attempt: 2, ceiling: 2_000 },
    { attempt: 3, ceiling: 4_000 },
    { attempt: 9, ceiling: 256_000 },
    { attempt: 10, ceiling: 300_000 },
    { attempt: 50, ceiling: 300_000 },
  ])('attempt $attempt waits somewhere in [0, $ceiling) ms', ({ attempt, ceiling }) => {
    expect(backoffDelay(attempt, DEFAULT_BACKOFF, 0)).toBe(0);
    expect(backoffDelay(attempt, DEFAULT_BACKOFF, 0.5)).toBe(ceiling / 2);
    const top = backoffDelay(attempt, DEFAULT_BACKOFF, 1 - Number.EPSILON);
    expect(top).toBeLessThan(ceiling);
    expect(top).toBeGreaterThanOrEqual(ceiling - 1);
  });

  it('for any attempt and jitter the delay is a whole number within the jitter bounds and the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, random) => {
          const delay = backoffDelay(attempt, DEFAULT_BACKOFF, random);
          const ceiling = Math.min(
            DEFAULT_BACKOFF.maxMs,
            DEFAULT_BACKOFF.baseMs * 2 ** Math.max(0, attempt - 1),
          );
          return Number.isInteger(delay) && delay >= 0 && delay < ceiling && delay <= 300_000;
        },
      ),
    );
  });
});
