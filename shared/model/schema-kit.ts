import {
  boolean,
  custom,
  int,
  literal,
  looseObject,
  maximum,
  maxLength,
  minLength,
  nonnegative,
  nullable,
  null as nullSchema,
  number,
  optional,
  positive,
  regex,
  strictObject,
  string,
  type infer as ZodInfer,
  type ZodMiniType,
} from 'zod/mini';
import type { Json } from './json.ts';

/**
 * What the browser bundles use of zod: the tree-shakable `zod/mini` form, imported by name so a
 * bundler keeps only these (a namespace import, or the full API, would add hundreds of
 * kilobytes — every locale included — to every service worker). A bundler cannot drop a property
 * of this object, so every name listed here ships in the worker whether used or not: list only
 * what a schema uses.
 */
export const z = {
  boolean,
  custom,
  int,
  literal,
  looseObject,
  maximum,
  maxLength,
  minLength,
  nonnegative,
  null: nullSchema,
  nullable,
  number,
  optional,
  positive,
  regex,
  strictObject,
  string,
};

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
 * A plain object of strings (request headers), each key and value within the given lengths. A
 * check of its own for the same reason as {@link jsonValue}: zod's record schema is the largest
 * kind the worker would otherwise ship.
 */
export function stringRecord(limits: { maxKey?: number; maxValue?: number } = {}) {
  const { maxKey = Number.POSITIVE_INFINITY, maxValue = Number.POSITIVE_INFINITY } = limits;
  return z.custom<Record<string, string>>(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      Object.getPrototypeOf(value) === Object.prototype &&
      Object.entries(value).every(
        ([key, item]) =>
          key.length > 0 &&
          key.length <= maxKey &&
          typeof item === 'string' &&
          item.length <= maxValue,
      ),
    { error: 'expected an object of strings' },
  );
}

/** How deep `payload` and `meta` may nest; deeper (or circular) values are not JSON here. */
export const MAX_JSON_DEPTH = 256;

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
    let message: string = issue.code.replaceAll('_', ' ');
    if (issue.expected !== undefined) message += `: expected ${String(issue.expected)}`;
    if (issue.keys?.length) message += `: ${issue.keys.join(', ')}`;
    return { path: issue.path.map(String).join('.') || '(root)', message };
  });
}
