/**
 * How a PostgreSQL error reads to a ledger (SPEC §15): worth retrying the transaction, or the
 * database unavailable right now (503). Shared by the reference store and the kit's ledger.
 */

/** Errors worth retrying: serialization failure, deadlock. */
export const RETRYABLE: ReadonlySet<string> = new Set(['40001', '40P01']);

/** Errors meaning "the database is not available right now": class 08, 53, 57P0x. */
const UNAVAILABLE = /^(08|53|57P0)/;

/**
 * The database's own time limits: a statement cancelled by `statement_timeout` (57014), a lock
 * not granted within `lock_timeout` (55P03). The statement applied nothing (its transaction
 * rolled back) and the connection stays good: busy right now, 503 with `Retry-After`, never 500
 * (SPEC §15).
 */
const OUT_OF_TIME: ReadonlySet<string> = new Set(['57014', '55P03']);

/** The SQLSTATE (or Node's error code) of an error, if it has one. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether a statement ran out of the time the database gives it (a timeout, not a fault). */
export function isOutOfTime(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && OUT_OF_TIME.has(code);
}

/** Whether an error means the database cannot be reached or is shutting down right now. */
export function isUnavailable(error: unknown): boolean {
  const code = errorCode(error);
  if (code !== undefined && UNAVAILABLE.test(code)) return true;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE') return true;
  const message = error instanceof Error ? error.message : '';
  return /timeout exceeded when trying to connect|Connection terminated/i.test(message);
}
