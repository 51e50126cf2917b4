import { ERROR_CODES, type ErrorCode } from './error-codes.ts';
import { OutboxError } from './errors.ts';

/** An {@link OutboxError} with its code's hint (and, without a message, the hint as message). */
export function outboxError(
  code: ErrorCode,
  message?: string,
  details?: Record<string, unknown>,
): OutboxError {
  return new OutboxError(code, message, details, ERROR_CODES[code]);
}
