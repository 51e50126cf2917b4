/** Backoff settings (SPEC §11). */
export interface BackoffConfig {
  baseMs: number;
  maxMs: number;
}

/** Base 1 s, cap 5 min (§11). */
export const DEFAULT_BACKOFF: BackoffConfig = { baseMs: 1000, maxMs: 300_000 };

/**
 * Delay before attempt `attempt + 1`: exponential (factor 2) with full jitter, capped; a server's
 * `Retry-After` wins (SPEC §11). `random` is in [0, 1).
 */
export function backoffDelay(
  attempt: number,
  config: BackoffConfig,
  random: number,
  retryAfterMs?: number,
): number {
  // The server knows its own load: its Retry-After is honoured as given, even past the cap.
  if (retryAfterMs !== undefined) return retryAfterMs;
  const ceiling = Math.min(config.maxMs, config.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random * ceiling);
}
