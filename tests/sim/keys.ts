/**
 * The shadow's maps keyed as IndexedDB keys them (SPEC §6.1): by value. An array, Date or binary
 * key read back from a store is a new object, so a `Map` keyed by the object would miss it; these
 * maps and sets find an entry under any key equal by value to the one it was stored with.
 */

function bytes(key: ArrayBuffer | ArrayBufferView): Uint8Array {
  return key instanceof ArrayBuffer
    ? new Uint8Array(key)
    : new Uint8Array(key.buffer, key.byteOffset, key.byteLength);
}

/** A text equal for keys equal by value (and for nothing else); primitives stay as they are. */
export function keyText(key: unknown): string {
  if (typeof key === 'number') return `n${key}`;
  if (typeof key === 'string') return `s${key}`;
  if (key instanceof Date) return `d${key.getTime()}`;
  if (key instanceof ArrayBuffer || ArrayBuffer.isView(key))
    return `b${[...bytes(key)].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
  if (Array.isArray(key)) return `a[${key.map(keyText).join(',')}]`;
  return `?${String(key)}`;
}

const isObject = (key: unknown): key is object => typeof key === 'object' && key !== null;

/** A `Map` whose object keys (arrays, Dates, binary) match by value. */
export class KeyedMap<V> extends Map<unknown, V> {
  readonly #first = new Map<string, unknown>();

  #find(key: unknown): unknown {
    return isObject(key) ? (this.#first.get(keyText(key)) ?? key) : key;
  }

  override get(key: unknown): V | undefined {
    return super.get(this.#find(key));
  }

  override has(key: unknown): boolean {
    return super.has(this.#find(key));
  }

  override set(key: unknown, value: V): this {
    const found = this.#find(key);
    if (isObject(key) && found === key) this.#first.set(keyText(key), key);
    return super.set(found, value);
  }

  override delete(key: unknown): boolean {
    const found = this.#find(key);
    if (isObject(key)) this.#first.delete(keyText(key));
    return super.delete(found);
  }
}

/** A `Set` whose object keys match by value. */
export class KeyedSet extends Set<unknown> {
  readonly #first = new Map<string, unknown>();

  #find(key: unknown): unknown {
    return isObject(key) ? (this.#first.get(keyText(key)) ?? key) : key;
  }

  override has(key: unknown): boolean {
    return super.has(this.#find(key));
  }

  override add(key: unknown): this {
    const found = this.#find(key);
    if (isObject(key) && found === key) this.#first.set(keyText(key), key);
    return super.add(found);
  }

  override delete(key: unknown): boolean {
    const found = this.#find(key);
    if (isObject(key)) this.#first.delete(keyText(key));
    return super.delete(found);
  }
}

/** The kinds of key a corrupt value is written under (SPEC §6.1: every valid IndexedDB key type). */
export const KEY_KINDS = ['string', 'number', 'date', 'array', 'binary'] as const;
export type KeyKind = (typeof KEY_KINDS)[number];

export function keyKind(key: unknown): KeyKind | undefined {
  if (typeof key === 'string') return 'string';
  if (typeof key === 'number') return 'number';
  if (key instanceof Date) return 'date';
  if (Array.isArray(key)) return 'array';
  if (key instanceof ArrayBuffer || ArrayBuffer.isView(key)) return 'binary';
  return undefined;
}

/** A key as a trace or a failure names it: a string as it is, any other with its type. */
export function describeKey(key: unknown): string {
  const kind = keyKind(key);
  if (kind === 'string') return key as string;
  if (kind === 'date') return `date key ${(key as Date).toISOString()}`;
  return `${kind ?? 'invalid'} key ${keyText(key).slice(1)}`;
}
