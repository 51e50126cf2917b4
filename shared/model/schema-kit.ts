import type { infer as ZodInfer, ZodMiniType } from 'zod/mini';
import type { Json } from './json.ts';
import * as z from './zod.ts';

export { z };

/** The type a schema parses to (zod's `z.infer`). */
export type Infer<T> = ZodInfer<T>;
/** A schema parsing to `T`. */
export type Schema<T> = ZodMiniType<T>;

/**
 * Any JSON value: null, booleans, finite numbers, strings, arrays and plain objects of them, at
 * most {@link MAX_JSON_DEPTH} levels deep. One check rather than zod's lazy union of arrays and
 * records, which would ship those four schema kinds in every worker for this one use.
 */
export const jsonValue: Schema<Json> = z.custom<Json>((value) => isJson(value, 0), {
  error: 'expected a JSON value',
});

/**
 * A plain object of strings (request headers). A check of its own for the same reason as
 * {@link jsonValue}: zod's record schema is the largest kind the worker would otherwise ship.
 */
export const stringRecord: Schema<Record<string, string>> = z.custom<Record<string, string>>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    Object.getPrototypeOf(value) === Object.prototype &&
    Object.entries(value).every(([key, item]) => key.length > 0 && typeof item === 'string'),
  { error: 'expected an object of strings' },
);

/**
 * A string of `min` to `max` characters, optionally matching `pattern`; `what` names it in the
 * issue. One check of its own rather than zod's length and regex checks, each a class the worker
 * would otherwise ship.
 */
export function text(min: number, max = Number.POSITIVE_INFINITY, pattern?: RegExp, what?: string) {
  return z.custom<string>(
    (value) =>
      typeof value === 'string' &&
      value.length >= min &&
      value.length <= max &&
      (pattern === undefined || pattern.test(value)),
    {
      error:
        what ??
        `expected a string of ${max < Number.POSITIVE_INFINITY ? `${min} to ${max}` : `at least ${min}`} characters`,
    },
  );
}

/**
 * A non-negative safe integer (a count, a fence, a revision). One check for the same reason as
 * {@link text}: zod's integer format and range checks are three more classes.
 */
export const count: Schema<number> = z.custom<number>(
  (value) => Number.isSafeInteger(value) && (value as number) >= 0,
  { error: 'expected a non-negative integer' },
);

/** How deep `payload` and `meta` may nest; deeper (or circular) values are not JSON here. */
const MAX_JSON_DEPTH = 256;

function isJson(value: unknown, depth: number): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth >= MAX_JSON_DEPTH) return false;
  if (Array.isArray(value)) return value.every((item) => isJson(item, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value).every((item) => isJson(item, depth + 1));
}

/** One validation problem, with its path spelled out (`payload.title`). */
export interface IssueSummary {
  path: string;
  message: string;
}

/**
 * Readable issues without shipping zod's message locales: the issue code, plus what was
 * expected where zod says so.
 */
export function summarizeIssues(
  issues: readonly {
    path: PropertyKey[];
    code: string;
    message?: string;
    expected?: unknown;
    keys?: string[];
  }[],
): IssueSummary[] {
  return issues.map((issue) => {
    // A check of our own says what it expects; zod's own messages live in locales not shipped.
    if (issue.code === 'custom' && issue.message) {
      return { path: issue.path.map(String).join('.') || '(root)', message: issue.message };
    }
    let message: string = issue.code.replaceAll('_', ' ');
    if (issue.expected !== undefined) message += `: expected ${String(issue.expected)}`;
    if (issue.keys?.length) message += `: ${issue.keys.join(', ')}`;
    return { path: issue.path.map(String).join('.') || '(root)', message };
  });
}
