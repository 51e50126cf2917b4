import type { OutboxStore } from '../../shared/model/store.ts';

/** The store's asynchronous methods: the ones a test may hold up, fail or watch. */
export type StoreMethod = {
  [K in keyof OutboxStore]: OutboxStore[K] extends (...args: never[]) => Promise<unknown>
    ? K
    : never;
}[keyof OutboxStore];

/**
 * A store wrapper for fault injection (`wrapStore` of a test holder): every call of `method` goes
 * through `around`, which gets the store's own method and the call's arguments and decides when
 * to call through, or whether to throw instead. Every other member is the store's own.
 */
export function aroundStore<K extends StoreMethod>(
  method: K,
  around: (own: OutboxStore[K], ...args: Parameters<OutboxStore[K]>) => ReturnType<OutboxStore[K]>,
): (store: OutboxStore) => OutboxStore {
  return (store) =>
    new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return value;
        const own = value.bind(target);
        if (name !== method) return own;
        return (...args: Parameters<OutboxStore[K]>) => around(own, ...args);
      },
    });
}

/** A gate a wrapped store call waits at until the test lets it through or opens the gate. */
export interface Gate {
  waiting: Array<() => void>;
  open: boolean;
}

/** Waits at `gate` unless it is open (the test lets each waiter through by calling it). */
export async function passGate(gate: Gate): Promise<void> {
  if (!gate.open) await new Promise<void>((go) => gate.waiting.push(go));
}
