/**
 * IndexedDB key semantics, modelled for the memory store so that both stores order, index and
 * skip the same values (SPEC §3: one conformance suite), and compared by value for both (§6.1).
 */

/** A key: a number (not NaN), a string, a valid Date, binary, or an array of keys. */
export type Key = number | string | Date | ArrayBuffer | ArrayBufferView | readonly Key[];

/** Whether a value is binary, as IndexedDB reads a key: a buffer or a view of one. */
function isBinary(value: unknown): value is ArrayBuffer | ArrayBufferView {
  return value instanceof ArrayBuffer || ArrayBuffer.isView(value);
}

/** The bytes of a binary key. */
function bytesOf(key: ArrayBuffer | ArrayBufferView): Uint8Array {
  return key instanceof ArrayBuffer
    ? new Uint8Array(key)
    : new Uint8Array(key.buffer, key.byteOffset, key.byteLength);
}

/** Whether a value is a key IndexedDB would accept. */
export function isValidKey(value: unknown): value is Key {
  if (typeof value === 'number') return !Number.isNaN(value);
  if (typeof value === 'string') return true;
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  if (isBinary(value)) return true;
  if (!Array.isArray(value)) return false;
  // A for loop, not `every`: a hole in a sparse array is an invalid key component.
  for (let i = 0; i < value.length; i++) if (!isValidKey(value[i])) return false;
  return true;
}

function typeRank(key: Key): number {
  if (typeof key === 'number') return 0;
  if (key instanceof Date) return 1;
  if (typeof key === 'string') return 2;
  return isBinary(key) ? 3 : 4;
}

/**
 * `indexedDB.cmp`: numbers < dates < strings < binary < arrays; arrays compare element by
 * element, binary byte by byte.
 */
function compareKeys(a: Key, b: Key): number {
  const rank = typeRank(a) - typeRank(b);
  if (rank !== 0) return Math.sign(rank);
  if (isBinary(a) && isBinary(b)) {
    const [x, y] = [bytesOf(a), bytesOf(b)];
    const shared = Math.min(x.length, y.length);
    for (let i = 0; i < shared; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return Math.sign(x.length - y.length);
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const shared = Math.min(a.length, b.length);
    for (let i = 0; i < shared; i++) {
      const order = compareKeys(a[i] as Key, b[i] as Key);
      if (order !== 0) return order;
    }
    return Math.sign(a.length - b.length);
  }
  const x = a instanceof Date ? a.getTime() : a;
  const y = b instanceof Date ? b.getTime() : b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A string that is equal for two keys exactly when {@link compareKeys} says they are equal: how
 * both stores compare keys by value, whatever object a key was read back as (§6.1).
 */
export function encodeKey(key: Key): string {
  if (typeof key === 'number') return `n${key === 0 ? 0 : key}`;
  if (typeof key === 'string') return `s${JSON.stringify(key)}`;
  if (key instanceof Date) return `d${key.getTime()}`;
  if (isBinary(key)) return `b${[...bytesOf(key)].join('.')}`;
  return `[${(key as readonly Key[]).map(encodeKey).join(',')}]`;
}

/**
 * Evaluates a key path on a stored value as IndexedDB does: the key, or undefined when any part
 * is missing or not a valid key (such a value is simply not in the index).
 */
export function evaluateKeyPath(
  value: unknown,
  keyPath: string | readonly string[],
): Key | undefined {
  if (typeof keyPath !== 'string') {
    const parts: Key[] = [];
    for (const path of keyPath) {
      const part = evaluateKeyPath(value, path);
      if (part === undefined) return undefined;
      parts.push(part);
    }
    return parts;
  }
  let current: unknown = value;
  for (const name of keyPath.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, name)) {
      return undefined;
    }
    current = (current as Record<string, unknown>)[name];
  }
  return isValidKey(current) ? current : undefined;
}

/** One index entry: the index key and the record's primary key. */
export interface IndexEntry {
  key: Key;
  primaryKey: Key;
}

/** Bounds of a key range; an omitted side is unbounded. */
export interface KeyRangeBounds {
  lower?: Key;
  lowerOpen?: boolean;
  upper?: Key;
  upperOpen?: boolean;
}

/**
 * An index kept sorted by `[key, primaryKey]`, the order IndexedDB iterates an index in. Range
 * reads start by binary search, so their cost does not grow with the entries before the range.
 */
export class SortedIndex {
  readonly #entries: IndexEntry[] = [];

  insert(entry: IndexEntry): void {
    this.#entries.splice(this.#firstNotBefore(entry), 0, entry);
  }

  remove(entry: IndexEntry): void {
    const at = this.#firstNotBefore(entry);
    const found = this.#entries[at];
    if (found && compareEntries(found, entry) === 0) this.#entries.splice(at, 1);
  }

  /** Entries within the bounds, at most `limit`, ascending or (`prev`) descending. */
  range(bounds: KeyRangeBounds, limit: number, direction: 'next' | 'prev' = 'next'): IndexEntry[] {
    const start = bounds.lower === undefined ? 0 : this.#boundary(bounds.lower, !bounds.lowerOpen);
    const end =
      bounds.upper === undefined
        ? this.#entries.length
        : this.#boundary(bounds.upper, bounds.upperOpen === true);
    if (end <= start) return [];
    if (direction === 'next') return this.#entries.slice(start, Math.min(end, start + limit));
    return this.#entries.slice(Math.max(start, end - limit), end).reverse();
  }

  /** The first position whose entry is not before `entry` in `[key, primaryKey]` order. */
  #firstNotBefore(entry: IndexEntry): number {
    return this.#search((candidate) => compareEntries(candidate, entry) < 0);
  }

  /** The first position whose key is `> key`, or `>= key` when `orEqual`. */
  #boundary(key: Key, orEqual: boolean): number {
    return this.#search((candidate) => {
      const order = compareKeys(candidate.key, key);
      return orEqual ? order < 0 : order <= 0;
    });
  }

  /** The first position where `before` turns false (`before` is monotonic over the entries). */
  #search(before: (entry: IndexEntry) => boolean): number {
    let low = 0;
    let high = this.#entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(this.#entries[mid] as IndexEntry)) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

function compareEntries(a: IndexEntry, b: IndexEntry): number {
  return compareKeys(a.key, b.key) || compareKeys(a.primaryKey, b.primaryKey);
}
