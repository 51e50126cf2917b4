import type { ErrorCode } from './error-codes.ts';
import { PAGE_ERROR_CODES } from './page-error-codes.ts';

export type { ErrorCode };

/**
 * An error with a stable `code`, structured `details` and a recovery `hint`, preserved across
 * Comlink. Raised in the worker it is made with `outboxError` (`outbox-error.ts`), which looks the
 * hint up in `ERROR_CODES`; the page's own codes find theirs in {@link PAGE_ERROR_CODES}. The
 * page loads neither the table nor that helper (SPEC §22).
 */
export class OutboxError extends Error {
  override readonly name = 'OutboxError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** How to recover (the code's line in {@link ERROR_CODES}). */
  readonly hint: string;

  constructor(code: ErrorCode, message?: string, details?: Record<string, unknown>, hint?: string) {
    const known = hint ?? (PAGE_ERROR_CODES as Partial<Record<string, string>>)[code];
    super(message ?? known ?? code);
    this.code = code;
    this.details = details;
    this.hint = known ?? this.message;
  }

  /** A plain, structured-clone-safe form (for postMessage and logs). */
  toJSON(): SerializedOutboxError {
    return {
      name: 'OutboxError',
      code: this.code,
      message: this.message,
      details: this.details,
      hint: this.hint,
    };
  }
}

/** The wire form of an {@link OutboxError}. */
export interface SerializedOutboxError {
  name: 'OutboxError';
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
  hint?: string;
}

/**
 * Whether a code from the other side of the port has the shape of one: the page checks codes
 * this way, without the table, and so keeps a code a newer worker knows and it does not.
 */
export function isErrorCodeShaped(code: unknown): code is ErrorCode {
  return typeof code === 'string' && /^[a-z][a-z0-9_]*$/.test(code);
}
