import type { Clock, IdSource } from '../../shared/model/ports.ts';

/** A clock that moves only when a test says so. */
export interface TestClock extends Clock {
  advance(ms: number): void;
  set(at: number): void;
}

export function fixedClock(start = 1_000_000): TestClock {
  let at = start;
  return {
    now: () => at,
    advance(ms) {
      at += ms;
    },
    set(value) {
      at = value;
    },
  };
}

/** Deterministic ids: a per-source counter in hex, tagged so two holders never collide. */
export function countingIds(tag: string, random = 0.5): IdSource {
  let n = 0;
  const prefix = Array.from(tag, (c) => c.charCodeAt(0).toString(16))
    .join('')
    .slice(0, 8)
    .padEnd(8, '0');
  return {
    hex24: () => `${prefix}${(++n).toString(16).padStart(16, '0')}`,
    random: () => random,
  };
}
