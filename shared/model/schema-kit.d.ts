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
export declare const z: {
  boolean: typeof boolean;
  custom: typeof custom;
  int: typeof int;
  literal: typeof literal;
  looseObject: typeof looseObject;
  maximum: typeof maximum;
  maxLength: typeof maxLength;
  minLength: typeof minLength;
  nonnegative: typeof nonnegative;
  null: typeof nullSchema;
  nullable: typeof nullable;
  number: typeof number;
  optional: typeof optional;
  positive: typeof positive;
  regex: typeof regex;
  strictObject: typeof strictObject;
  string: typeof string;
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
export declare const jsonValue: Schema<Json>;
/**
 * A plain object of strings (request headers), each key and value within the given lengths. A
 * check of its own for the same reason as {@link jsonValue}: zod's record schema is the largest
 * kind the worker would otherwise ship.
 */
export declare function stringRecord(limits?: {
  maxKey?: number;
  maxValue?: number;
}): import('zod/mini').ZodMiniCustom<Record<string, string>, Record<string, string>>;
/** How deep `payload` and `meta` may nest; deeper (or circular) values are not JSON here. */
export declare const MAX_JSON_DEPTH = 256;
/** One validation problem, with its path spelled out (`payload.title`). */
export interface IssueSummary {
  path: string;
  message: string;
}
/**
 * Readable issues without shipping zod's message locales: the issue code, plus what was
 * expected where zod says so.
 */
export declare function summarizeIssues(
  issues: readonly {
    path: PropertyKey[];
    code: string;
    message?: string;
    expected?: unknown;
    keys?: string[];
  }[],
): IssueSummary[];
