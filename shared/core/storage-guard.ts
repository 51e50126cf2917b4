import { isQuotaError, OutboxError } from '../model/errors.ts';
import { outboxError } from '../model/outbox-error.ts';
import { FlushStop } from './flush-stop.ts';

/**
 * Where a storage fault surfaced: inside a flush, or in a call of the page API. It decides what
 * the fault becomes, never whether it is swallowed.
 */
export type StorageBoundary = 'flush' | 'api';

/**
 * Runs a store call and turns a storage fault into a typed outcome (SPEC §11, G7). In a flush it
 * stops the flush as a device-side transient (`FlushStop('storage')`, which never marks the
 * network offline); in the page API it is an `OutboxError` with `quota_exceeded` or `storage`.
 * Errors that are already typed pass through unchanged.
 */
export async function guardStorage<T>(
  boundary: StorageBoundary,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (boundary === 'flush') throw error instanceof FlushStop ? error : new FlushStop('storage');
    if (error instanceof OutboxError) throw error;
    // What the store could not clone (a proxy the checks could not see through) is the
    // caller's value, not a fault of the device.
    if (error instanceof Error && error.name === 'DataCloneError')
      throw outboxError('invalid_value', `a value cannot be stored: ${error.message}`);
    if (isQuotaError(error))
      throw outboxError('quota_exceeded', undefined, { cause: String(error) });
    throw outboxError('storage', undefined, { cause: String(error) });
  }
}
