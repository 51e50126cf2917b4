/** A JSON value, as stored in rows and sent on the wire. */
export type Json =
  | null
  | boolean
  | number
  | string
  | Json[]
  | {
      [key: string]: Json;
    };
/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` members dropped. Used for
 * fingerprints (SPEC §9) so that the same request always hashes the same.
 */
export declare function canonicalJson(value: unknown): string;
/**
 * Structural equality of two structured-clone values (the `replace` comparison, SPEC §3). Stored
 * values may be hostile — cyclic, nested thousands deep — so the walk is iterative and a pair
 * met again while it is being compared counts as equal (cycles of the same shape are equal).
 */
export declare function deepEqual(a: unknown, b: unknown): boolean;
/** Whether a value is a plain JSON object (not an array, not null). */
export declare function isJsonObject(value: unknown): value is {
  [key: string]: Json;
};
