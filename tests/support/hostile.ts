import { MAX_VALUE_DEPTH } from '../../shared/model/json-bounds.ts';

/** A value nested `depth` levels: `{ x: { x: … } }`. */
export function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let at = root;
  for (let i = 0; i < depth; i++) {
    const next: Record<string, unknown> = {};
    at.x = next;
    at = next;
  }
  return root;
}

export function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { title: 'loop' };
  value.self = value;
  return value;
}

const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};

/** The value classes a hostile caller or a corrupt store can hand over (SPEC §13, G7). */
export const HOSTILE: ReadonlyArray<{ name: string; value: () => unknown; code: string }> = [
  { name: 'a cyclic object', value: cyclic, code: 'value_cyclic' },
  {
    name: 'a cyclic array',
    value: () => {
      const a: unknown[] = [];
      a.push(a);
      return a;
    },
    code: 'value_cyclic',
  },
  {
    name: `a value nested ${MAX_VALUE_DEPTH + 1} levels`,
    value: () => nested(MAX_VALUE_DEPTH + 1),
    code: 'value_too_deep',
  },
  { name: 'a value nested 100,000 levels', value: () => nested(100_000), code: 'value_too_deep' },
  { name: 'a function', value: () => () => 1, code: 'invalid_value' },
  { name: 'a promise', value: () => Promise.resolve(1), code: 'invalid_value' },
  { name: 'a WeakMap', value: () => new WeakMap(), code: 'invalid_value' },
  { name: 'a Map', value: () => new Map([[1, 2]]), code: 'invalid_value' },
  { name: 'a Date', value: () => new Date(0), code: 'invalid_value' },
  { name: 'a RegExp', value: () => /x/, code: 'invalid_value' },
  {
    name: 'a class instance',
    value: () =>
      new (class Note {
        title = 'x';
      })(),
    code: 'invalid_value',
  },
  { name: 'a symbol', value: () => Symbol('x'), code: 'invalid_value' },
  { name: 'a bigint', value: () => 10n, code: 'invalid_value' },
  { name: 'NaN', value: () => Number.NaN, code: 'invalid_value' },
  { name: 'Infinity', value: () => Number.POSITIVE_INFINITY, code: 'invalid_value' },
  { name: 'a revoked proxy', value: revoked, code: 'invalid_value' },
  {
    name: 'a getter that throws',
    value: () =>
      Object.defineProperty({}, 'title', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      }),
    code: 'invalid_value',
  },
  {
    name: 'an array with a hole',
    value: () => Object.assign(new Array(3), { 0: 1, 2: 3 }),
    code: 'invalid_value',
  },
];
