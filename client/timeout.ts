import { type ErrorCode, OutboxError } from '../shared/model/errors.ts';

/**
 * Bounds a promise in time (SPEC §13: no call hangs). The promise itself is not cancelled — a
 * dead Comlink port never settles it — but the caller stops waiting and gets a typed error.
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  code: ErrorCode = 'timeout',
  details?: Record<string, unknown>,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new OutboxError(code, undefined, { timeoutMs: ms, ...details })),
      Math.max(0, ms),
    );
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
