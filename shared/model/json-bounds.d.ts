/**
 * Bounds on the values that enter the outbox or are read back from it (SPEC §2, §13, G7): plain
 * JSON only, no cycles, a bounded depth. The walk is iterative and never throws, so a hostile
 * value — cyclic, nested thousands deep, a getter that throws, a revoked proxy — is reported as
 * a problem instead of overflowing the stack of whoever looks at it.
 */
/**
 * How deep a payload, `meta` or argument may nest. Generous for application data, and far below
 * what browsers can hand a service worker back: Chromium returns no value at all for an
 * IndexedDB record nested about a thousand levels deep when a worker reads it.
 */
export declare const MAX_VALUE_DEPTH = 64;
/** What is wrong with a value, with where: `payload.items.3`. */
export interface ValueProblem {
  code: 'value_cyclic' | 'value_too_deep' | 'invalid_value';
  path: string;
  message: string;
}
/** Whether a value is a plain object: `{}` or `Object.create(null)`, nothing with a class. */
export declare function isPlainObject(value: unknown): value is Record<string, unknown>;
/**
 * The first problem of a value that must be plain JSON: `null`, booleans, finite numbers,
 * strings, arrays and plain objects, acyclic, at most `maxDepth` levels of nesting. Undefined
 * when it is fine. `undefined` members of objects are allowed (JSON drops them).
 */
export declare function inspectJson(
  value: unknown,
  options?: {
    maxDepth?: number;
    path?: string;
  },
): ValueProblem | undefined;
