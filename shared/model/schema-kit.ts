import {
  array,
  boolean,
  custom,
  int,
  lazy,
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
  record,
  regex,
  strictObject,
  string,
  union,
  type infer as ZodInfer,
  type ZodMiniType,
} from 'zod/mini';
import type { Json } from './json.ts';

/**
 * What the browser bundles use of zod: the tree-shakable `zod/mini` form, imported by name so a
 * bundler keeps only these (a namespace import, or the full API, would add hundreds of
 * kilobytes — every locale included — to every service worker).
 */
export const z = {
  array,
  boolean,
  custom,
  int,
  lazy,
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
  record,
  regex,
  strictObject,
  string,
  union,
};

/** The type a schema parses to (zod's `z.infer`). */
export type Infer<T> = ZodInfer<T>;
/** A schema parsing to `T`. */
export type Schema<T> = ZodMiniType<T>;

/** Any JSON value. */
export const jsonValue: Schema<Json> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number(),
    z.string(),
    z.array(jsonValue),
    z.record(z.string(), jsonValue),
  ]),
);

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
