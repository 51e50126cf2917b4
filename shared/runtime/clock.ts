import type { Clock } from '../model/ports.ts';

/**
 * The real clock, in one place (STYLE: planners and the dispatcher take it as a port). Used by
 * the service-worker engine and the page sender; tests pass their own.
 */

/** Wall-clock time from `Date.now()`. */
export const systemClock: Clock = { now: () => Date.now() };
