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
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'bigint') return 'a bigint';
  if (typeof value === 'undefined') return 'undefined';
  try {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)
      ?.constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${name}` : 'an object with a prototype';
  } catch {
    return 'an object that cannot be inspected';
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
  // Depth-first, with the ancestors of each node on the stack: a node seen among its own
  // ancestors is a cycle; one seen elsewhere is a shared reference, which JSON repeats.
  type Frame = { value: unknown; path: string; depth: number; exit?: true };
  const stack: Frame[] = [{ value, path: root, depth: 0 }];
  const ancestors = new Set<object>();
  const at = (path: string) => path || '(root)';
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const current = frame.value;
    if (frame.exit) {
      ancestors.delete(current as object);
      continue;
    }
    if (current === null || typeof current === 'string' || typeof current === 'boolean') continue;
    if (typeof current === 'number') {
      if (Number.isFinite(current)) continue;
      return { code: 'invalid_value', path: at(frame.path), message: `${current} is not JSON` };
    }
    if (typeof current !== 'object') {
      if (current === undefined && frame.path !== root) continue;
      return {
        code: 'invalid_value',
        path: at(frame.path),
        message: `${kindOf(current)} is not plain JSON`,
      };
    }
    let isArray: boolean;
    try {
      isArray = Array.isArray(current);
    } catch {
      return { code: 'invalid_value', path: at(frame.path), message: 'a revoked proxy' };
    }
    if (!isArray && !isPlainObject(current)) {
      return {
        code: 'invalid_value',
        path: at(frame.path),
        message: `${kindOf(current)} is not plain JSON`,
      };
    }
    if (ancestors.has(current)) {
      return { code: 'value_cyclic', path: at(frame.path), message: 'the value refers to itself' };
    }
    if (frame.depth > maxDepth) {
      return {
        code: 'value_too_deep',
        path: at(frame.path),
        message: `nested deeper than ${maxDepth} levels`,
      };
    }
    ancestors.add(current);
    stack.push({ value: current, path: frame.path, depth: frame.depth, exit: true });
    let entries: [string, unknown][];
    try {
      entries = isArray
        ? Array.from(current as unknown[], (item, i) => [String(i), item] as [string, unknown])
        : Object.keys(current).map((key) => [key, (current as Record<string, unknown>)[key]]);
    } catch (error) {
      return {
        code: 'invalid_value',
        path: at(frame.path),
        message: `reading it threw: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      if (isArray && child === undefined) {
        return {
          code: 'invalid_value',
          path: at(join(frame.path, key)),
          message: 'undefined is not JSON',
        };
      }
      stack.push({ value: child, path: join(frame.path, key), depth: frame.depth + 1 });
    }
  }
  return undefined;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** The UTF-8 length of a string, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code < 0xdc00 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next < 0xe000) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
