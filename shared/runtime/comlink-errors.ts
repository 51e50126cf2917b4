import { type TransferHandler, transferHandlers } from 'comlink';
import { isErrorCodeShaped, OutboxError } from '../model/errors.ts';

/**
 * Comlink's stock `throw` transfer handler keeps only `name`, `message` and `stack`, so an
 * {@link OutboxError} would arrive without its `code` and `details` (SPEC §13, G7). This one
 * keeps them. Install it on both sides of every connection (worker and page) before use.
 */

interface ThrownValue {
  value: unknown;
}

type SerializedThrow =
  | {
      isError: true;
      value: {
        name: string;
        message: string;
        stack?: string;
        code?: unknown;
        details?: unknown;
        hint?: unknown;
      };
    }
  | { isError: false; value: unknown };

/** Details must survive structured clone; anything that does not is dropped, never thrown. */
function cloneableDetails(details: unknown): unknown {
  if (details === undefined) return undefined;
  try {
    return structuredClone(details);
  } catch {
    return undefined;
  }
}

/** Installs the code-preserving `throw` handler on this realm's Comlink. Idempotent. */
export function installComlinkErrors(): void {
  const stock = transferHandlers.get('throw') as TransferHandler<ThrownValue, SerializedThrow>;
  if ((stock as { outbox?: boolean }).outbox) return;
  const handler: TransferHandler<ThrownValue, SerializedThrow> & { outbox: true } = {
    outbox: true,
    // The stock handler recognises Comlink's private thrown-value marker; reuse its test.
    canHandle: (value: unknown): value is ThrownValue => stock.canHandle(value),
    serialize({ value }) {
      if (!(value instanceof Error)) return [{ isError: false, value }, []];
      const { code, details, hint } = value as Error & {
        code?: unknown;
        details?: unknown;
        hint?: unknown;
      };
      const serialized: SerializedThrow = {
        isError: true,
        value: {
          name: value.name,
          message: value.message,
          code,
          details: cloneableDetails(details),
          // The hint travels with the error: the page does not carry the whole table (§22).
          ...(typeof hint === 'string' ? { hint } : {}),
        },
      };
      if (value.stack !== undefined) serialized.value.stack = value.stack;
      return [serialized, []];
    },
    deserialize(serialized) {
      if (!serialized.isError) throw serialized.value;
      const { name, message, stack, code, details, hint } = serialized.value;
      if (name === 'OutboxError' && isErrorCodeShaped(code)) {
        const error = new OutboxError(
          code,
          message,
          details as Record<string, unknown> | undefined,
          typeof hint === 'string' ? hint : undefined,
        );
        // Like the stock handler, show where it was thrown (in the worker).
        if (stack !== undefined) error.stack = stack;
        throw error;
      }
      throw Object.assign(new Error(message), serialized.value);
    },
  };
  transferHandlers.set('throw', handler as TransferHandler<unknown, unknown>);
}
