import type { SetAuthOptions } from './connection.ts';
import { OutboxError } from './errors.ts';
import { isObject } from './is-object.ts';
import { inspectJson, isPlainObject, MAX_VALUE_DEPTH } from './json-bounds.ts';
import type { FlushOptions, RowFilter } from './page-api.ts';

/**
 * The checks every argument of the page API passes (SPEC §13, G7), written once and run on
 * both sides of the port: in the page before anything is posted — so a value that cannot cross
 * to the worker is a typed error there, not a `DataCloneError` or a call that never answers —
 * and again in the worker, which trusts no page. Each check returns the value, typed, or
 * throws an {@link OutboxError} with a code and the argument's name in `details`. No zod here:
 * the page's first load carries these, so they stay small.
 */

/** What an option may hold: a string, a boolean, or a whole number from 1 to 10,000. */
type OptionKind = 'string' | 'boolean' | 'count';

function fail(code: 'invalid_argument' | 'invalid_id', argument: string, why: string): never {
  throw new OutboxError(code, `invalid ${argument}: ${why}`, { argument });
}

/** Plain JSON, acyclic, bounded: the problem as an error with its own code and path. */
function assertJson(value: unknown, argument: string, maxDepth = MAX_VALUE_DEPTH): void {
  const problem = inspectJson(value, { path: argument, maxDepth });
  if (problem)
    throw new OutboxError(
      problem.code,
      `invalid ${argument}: ${problem.path}: ${problem.message}`,
      {
        argument,
        path: problem.path,
      },
    );
}

function isOption(kind: OptionKind, value: unknown): boolean {
  if (kind === 'count')
    return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 10_000;
  return typeof value === kind;
}

/** An optional options object: undefined, or a plain object whose keys are all known. */
function options<T>(
  value: unknown,
  argument: string,
  keys: Record<string, OptionKind>,
): T | undefined {
  if (value === undefined) return undefined;
  assertJson(value, argument);
  if (!isPlainObject(value)) fail('invalid_argument', argument, 'expected an object');
  for (const [key, option] of Object.entries(value)) {
    const kind = keys[key];
    if (kind === undefined) fail('invalid_argument', argument, `unknown key "${key}"`);
    if (option !== undefined && !isOption(kind, option))
      fail(
        'invalid_argument',
        argument,
        `${key} must be a ${kind === 'count' ? 'whole number from 1 to 10000' : kind}`,
      );
  }
  return value as T;
}

/** An object of named options, such as `connectOutbox`'s: anything but null or an array. */
export function checkObject(value: unknown, argument: string): Record<string, unknown> {
  if (!isObject(value)) fail('invalid_argument', argument, 'expected an object');
  return value;
}

/** A non-empty string, such as `connectOutbox`'s owner and worker script. */
export function checkText(value: unknown, argument: string): string {
  if (typeof value !== 'string' || value === '')
    fail('invalid_argument', argument, 'expected a non-empty string');
  return value;
}

/** A row id, request id or subscription id: a non-empty string of at most 200 characters. */
export function checkId(value: unknown, argument = 'id'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200)
    fail('invalid_id', argument, 'expected a string of 1 to 200 characters');
  return value;
}

/** The filter of `rows()` and `subscribe()`: a collection, one record, or nothing. */
export function checkFilter(value: unknown, argument = 'filter'): RowFilter | undefined {
  return options(value, argument, { collection: 'string', targetId: 'string' });
}

/** `{ limit? }` of `conflicts()` and `receipts()`: a whole number from 1 to 10,000. */
export function checkLimit(value: unknown, argument = 'options'): { limit?: number } | undefined {
  return options(value, argument, { limit: 'count' });
}

/** The options of `flush()`: `{ force? }` with a boolean. */
export function checkFlushOptions(value: unknown, argument = 'options'): FlushOptions | undefined {
  return options(value, argument, { force: 'boolean' });
}

/** The options of `setAuth`: `{ persist? }` with a boolean. */
export function checkAuthOptions(value: unknown, argument = 'options'): SetAuthOptions | undefined {
  return options(value, argument, { persist: 'boolean' });
}

/** The headers of `setAuth`: null (forget), or header names (1–200 chars) to strings (≤ 8 KiB). */
export function checkHeaders(value: unknown, argument = 'headers'): Record<string, string> | null {
  if (value === null) return null;
  assertJson(value, argument);
  if (!isPlainObject(value)) fail('invalid_argument', argument, 'expected an object');
  for (const [name, header] of Object.entries(value)) {
    if (
      name.length === 0 ||
      name.length > 200 ||
      typeof header !== 'string' ||
      header.length > 8192
    )
      fail('invalid_argument', argument, `bad header "${name}"`);
  }
  return value as Record<string, string>;
}

/** A listener of `subscribe()` or `watch()` (in the worker: a Comlink proxy of one). */
export function checkListener<T extends (value: never) => unknown>(
  value: unknown,
  argument = 'listener',
): T {
  if (typeof value !== 'function') fail('invalid_argument', argument, 'expected a function');
  return value as T;
}

/**
 * The input of `enqueue`, as far as it can be checked without its schema: a plain object of
 * plain JSON whose payload and meta nest at most 64 levels (the input is one level above them).
 * Its fields are checked by the schema in the worker (`invalid_intent`, `invalid_id`).
 */
export function checkEnqueueInput(value: unknown, argument = 'input'): Record<string, unknown> {
  if (!isPlainObject(value))
    throw new OutboxError('invalid_intent', `invalid ${argument}: expected an object`, {
      argument,
      // The hint of invalid_intent points here, as for every other invalid input.
      issues: [{ path: '(root)', message: 'expected an object' }],
    });
  assertJson(value, argument, MAX_VALUE_DEPTH + 1);
  return value;
}
