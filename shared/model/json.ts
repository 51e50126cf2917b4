/** A JSON value, as stored in rows and sent on the wire. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` members dropped. Used for
 * fingerprints (SPEC §9) so that the same request always hashes the same.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * Structural equality of two structured-clone values (the `replace` comparison, SPEC §3). Stored
 * values may be hostile — cyclic, nested thousands deep — so the walk is iterative and a pair
 * met again while it is being compared counts as equal (cycles of the same shape are equal).
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  const pending: Array<[unknown, unknown]> = [[a, b]];
  const seen = new Map<object, Set<object>>();
  while (pending.length > 0) {
    const [x, y] = pending.pop()!;
    if (Object.is(x, y)) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    const pairs = seen.get(x);
    if (pairs?.has(y)) continue;
    if (pairs) pairs.add(y);
    else seen.set(x, new Set([y]));
    if (Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) return false;
    if (x instanceof Date) {
      if (x.getTime() !== (y as Date).getTime()) return false;
      continue;
    }
    if (Array.isArray(x)) {
      const other = y as unknown[];
      if (x.length !== other.length) return false;
      for (let i = 0; i < x.length; i++) pending.push([x[i], other[i]]);
      continue;
    }
    const kx = Object.keys(x);
    const ky = Object.keys(y);
    if (kx.length !== ky.length) return false;
    const ry = y as Record<string, unknown>;
    for (const key of kx) {
      if (!Object.hasOwn(ry, key)) return false;
      pending.push([(x as Record<string, unknown>)[key], ry[key]]);
    }
  }
  return true;
}

/** Whether a value is a plain JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
