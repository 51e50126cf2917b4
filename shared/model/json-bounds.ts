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
export const MAX_VALUE_DEPTH = 64;

/** What is wrong with a value, with where: `payload.items.3`. */
export interface ValueProblem {
  code: 'value_cyclic' | 'value_too_deep' | 'invalid_value';
  path: string;
  message: string;
}

/** Whether a value is a plain object: `{}` or `Object.create(null)`, nothing with a class. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  try {
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null;
  } catch {
    return false;
  }
}

function kindOf(value: unknown): string {
  if (typeof value !== 'object') return typeof value;
  try {
    return (
      (Object.getPrototypeOf(value) as { constructor?: { name?: string } }).constructor?.name ||
      'object'
    );
  } catch {
    return 'object';
  }
}

/**
 * The first problem of a value that must be plain JSON: `null`, booleans, finite numbers,
 * strings, arrays and plain objects, acyclic, at most `maxDepth` levels of nesting. Undefined
 * when it is fine. `undefined` members of objects are allowed (JSON drops them).
 */
export function inspectJson(
  value: unknown,
  options: { maxDepth?: number; path?: string } = {},
): ValueProblem | undefined {
  const maxDepth = options.maxDepth ?? MAX_VALUE_DEPTH;
  const root = options.path ?? '';
  // Depth-first, with the ancestors of each node in a set: a node met among its own ancestors
  // is a cycle; one met elsewhere is a shared reference, which JSON simply repeats.
  const stack: Array<{ value: unknown; path: string; depth: number; exit?: true }> = [
    { value, path: root, depth: 0 },
  ];
  const ancestors = new Set<unknown>();
  while (stack.length > 0) {
    const { value: current, path, depth, exit } = stack.pop()!;
    const problem = (code: ValueProblem['code'], message: string): ValueProblem => ({
      code,
      path: path || '(root)',
      message,
    });
    if (exit) {
      ancestors.delete(current);
      continue;
    }
    if (current === null || typeof current === 'string' || typeof current === 'boolean') continue;
    if (current === undefined && path !== root) continue;
    if (typeof current === 'number') {
      if (Number.isFinite(current)) continue;
      return problem('invalid_value', `${current} is not JSON`);
    }
    let entries: [string, unknown][];
    try {
      const isArray = Array.isArray(current);
      if (!isArray && !isPlainObject(current))
        return problem('invalid_value', `a ${kindOf(current)} is not plain JSON`);
      if (ancestors.has(current)) return problem('value_cyclic', 'the value refers to itself');
      if (depth > maxDepth)
        return problem('value_too_deep', `nested deeper than ${maxDepth} levels`);
      entries = isArray
        ? Array.from(current as unknown[], (item, i) => [String(i), item])
        : Object.keys(current as object).map((key) => [
            key,
            (current as Record<string, unknown>)[key],
          ]);
      if (isArray && entries.some(([, item]) => item === undefined))
        return problem('invalid_value', 'an array holding undefined is not JSON');
    } catch (error) {
      // A revoked proxy, a getter that throws: reading it failed.
      return problem('invalid_value', `reading it threw: ${String(error)}`);
    }
    ancestors.add(current);
    stack.push({ value: current, path, depth, exit: true });
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      stack.push({ value: child, path: path === '' ? key : `${path}.${key}`, depth: depth + 1 });
    }
  }
  return undefined;
}
