import type { SetAuthOptions } from './connection.ts';
import { OutboxError } from './errors.ts';
import { inspectJson, isPlainObject, MAX_VALUE_DEPTH } from './json-bounds.ts';
import type { FlushOptions, RowFilter } from './protocol.ts';

/**
 * The checks every argument of the page API passes (SPEC §13, G7), written once and run on
 * both sides of the port: in the page before anything is posted — so a value that cannot cross
 * to the worker is a typed error there, not a `DataCloneError` or a call that never answers —
 * and again in the worker, which trusts no page. Each check returns the value, typed, or
 * throws an {@link OutboxError} with a code and the argument's name in `details`. No zod here:
 * the page's initial bundle carries these.
 */

const MAX_ID_LENGTH = 200;
const MAX_LIMIT = 10_000;
const MAX_HEADER_NAME = 200;
const MAX_HEADER_VALUE = 8192;

function fail(
  code: 'invalid_argument' | 'invalid_id',
  argument: string,
  message: string,
): OutboxError {
  return new OutboxError(code, `invalid ${argument}: ${message}`, { argument });
}

/** Plain JSON, acyclic, bounded: the problem as an error, with its code and path. */
function assertJson(value: unknown, argument: string, maxDepth = MAX_VALUE_DEPTH): void {
  const problem = inspectJson(value, { path: argument, maxDepth });
  if (problem !== undefined) {
    throw new OutboxError(
      problem.code,
      `invalid ${argument}: ${problem.path}: ${problem.message}`,
      {
        argument,
        path: problem.path,
      },
    );
  }
}

/** An optional options object: undefined, or a plain object with only the named keys. */
function optionsObject(
  value: unknown,
  argument: string,
  keys: readonly string[],
): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  assertJson(value, argument);
  if (!isPlainObject(value)) throw fail('invalid_argument', argument, 'expected an object');
  for (const key of Object.keys(value)) {
    if (!keys.includes(key))
      throw fail(
        'invalid_argument',
        argument,
        `unknown key "${key}" (expected ${keys.join(', ')})`,
      );
  }
  return value;
}

/** A row id, request id or subscription id: a non-empty string of at most 200 characters. */
export function checkId(value: unknown, argument = 'id'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH)
    throw fail('invalid_id', argument, `expected a string of 1 to ${MAX_ID_LENGTH} characters`);
  return value;
}

/** The filter of `rows()` and `subscribe()`: a collection, one record, or nothing. */
export function checkFilter(value: unknown, argument = 'filter'): RowFilter | undefined {
  const filter = optionsObject(value, argument, ['collection', 'targetId']);
  if (filter === undefined) return undefined;
  for (const key of ['collection', 'targetId'] as const) {
    if (filter[key] !== undefined && typeof filter[key] !== 'string')
      throw fail('invalid_argument', argument, `${key} must be a string`);
  }
  return filter as RowFilter;
}

/** `{ limit? }` of `conflicts()` and `receipts()`: a whole number from 1 to 10,000. */
export function checkLimit(value: unknown, argument = 'options'): { limit?: number } | undefined {
  const options = optionsObject(value, argument, ['limit']);
  const limit = options?.limit;
  if (
    limit !== undefined &&
    (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
  )
    throw fail('invalid_argument', argument, `limit must be a whole number from 1 to ${MAX_LIMIT}`);
  return options as { limit?: number } | undefined;
}

/** The options of `flush()`: `{ force? }` with a boolean. */
export function checkFlushOptions(value: unknown, argument = 'options'): FlushOptions | undefined {
  const options = optionsObject(value, argument, ['force']);
  if (options?.force !== undefined && typeof options.force !== 'boolean')
    throw fail('invalid_argument', argument, 'force must be a boolean');
  return options as FlushOptions | undefined;
}

/** The headers of `setAuth`: null (forget), or header names to string values. */
export function checkHeaders(value: unknown, argument = 'headers'): Record<string, string> | null {
  if (value === null) return null;
  assertJson(value, argument);
  if (!isPlainObject(value)) throw fail('invalid_argument', argument, 'expected an object or null');
  for (const [name, header] of Object.entries(value)) {
    if (name.length === 0 || name.length > MAX_HEADER_NAME)
      throw fail(
        'invalid_argument',
        argument,
        `a header name must have 1 to ${MAX_HEADER_NAME} characters`,
      );
    if (typeof header !== 'string' || header.length > MAX_HEADER_VALUE)
      throw fail(
        'invalid_argument',
        argument,
        `header "${name}" must be a string of at most ${MAX_HEADER_VALUE} characters`,
      );
  }
  return value as Record<string, string>;
}

/** The options of `setAuth`: `{ persist? }` with a boolean. */
export function checkAuthOptions(value: unknown, argument = 'options'): SetAuthOptions | undefined {
  const options = optionsObject(value, argument, ['persist']);
  if (options?.persist !== undefined && typeof options.persist !== 'boolean')
    throw fail('invalid_argument', argument, 'persist must be a boolean');
  return options as SetAuthOptions | undefined;
}

/** A listener of `subscribe()` or `watch()` (in the worker: a Comlink proxy of one). */
export function checkListener<T extends (value: never) => unknown>(
  value: unknown,
  argument = 'listener',
): T {
  if (typeof value !== 'function') throw fail('invalid_argument', argument, 'expected a function');
  return value as T;
}

/**
 * The input of `enqueue`, as far as it can be checked without its schema: a plain object of
 * plain JSON whose payload and meta nest at most 64 levels. Its fields are checked by the schema
 * in the worker (`invalid_intent`, `invalid_id`).
 */
export function checkEnqueueInput(value: unknown, argument = 'input'): Record<string, unknown> {
  if (!isPlainObject(value))
    throw new OutboxError('invalid_intent', `invalid ${argument}: expected an object`, {
      argument,
    });
  // The input is one level above its payload and meta.
  assertJson(value, argument, MAX_VALUE_DEPTH + 1);
  return value;
}
