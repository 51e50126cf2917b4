import {
  type DrainComparison,
  type DrainOptions,
  type DrainResult,
  measureDrain,
} from './drain.ts';
import type { BenchServer } from './server.ts';

/**
 * A drain at phone-like latency (SPEC §19): 500 rows queued while offline, then every write
 * answered 200 ms late, as a phone's network answers, and the time until all of them are
 * applied — ours in batches, ours one request per row, and Workbox's Queue on the same requests,
 * each in its own profile, in one run (the drain bench's own machinery, `measureDrain`).
 */

/** What SPEC §19 asks: 500 rows at +200 ms all applied within 3 s. */
export const PHONE_TARGET = { rows: 500, latencyMs: 200, seconds: 3 } as const;

export interface PhoneResult extends DrainComparison {
  options: DrainOptions;
  /** Seconds until all rows were applied, as SPEC §19 asks for it. */
  targetSeconds: number;
}

export async function measurePhone(
  server: BenchServer,
  options: { rows?: number; capSeconds: number },
): Promise<PhoneResult> {
  const drain: DrainOptions = {
    rows: options.rows ?? PHONE_TARGET.rows,
    latencyMs: PHONE_TARGET.latencyMs,
    capSeconds: options.capSeconds,
  };
  const comparison = await measureDrain(server, drain);
  return { options: drain, ...comparison, targetSeconds: PHONE_TARGET.seconds };
}

/** `all 500 in 1.62 s`, or how far a drain got when its window closed. */
export function appliedIn(r: Pick<DrainResult, 'rows' | 'drained' | 'seconds' | 'complete'>) {
  return r.complete
    ? `all ${r.rows.toLocaleString('en')} in ${r.seconds} s`
    : `${r.drained.toLocaleString('en')} of ${r.rows.toLocaleString('en')} by ${r.seconds} s`;
}
