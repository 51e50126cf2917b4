import {
  createOutboxEngine,
  type EngineEvent,
  type OutboxEngine,
  type OutboxEngineConfig,
} from '../../sw/index.ts';
import type { HolderInfo } from '../protocol.ts';

/**
 * Holders of the demo worker, one at a time, so the inspector can show a takeover (SPEC §4, §18
 * scenario 11) without the browser actually killing the worker, which a page cannot ask for.
 *
 * Each holder is a full engine (its own holder id, store connection and flush loop) attached to
 * a stand-in for the worker's global scope. The real scope's events are forwarded to the current
 * holder only. Stopping a holder makes it behave like a worker that died mid-send: it gets no
 * more events, a request it has not started never starts, and an answer that arrives later is
 * never read — so its claims stay in the store until their lease runs out and the next holder
 * takes the rows over with a higher fence, resending the same idempotency keys.
 */

/** The worker events an engine listens to (SPEC §12); forwarded to the current holder. */
export const FORWARDED_EVENTS = [
  'install',
  'activate',
  'sync',
  'periodicsync',
  'push',
  'message',
] as const;

type Listener = EventListenerOrEventListenerObject;

interface Holder extends HolderInfo {
  engine: OutboxEngine;
  listeners: Map<string, Set<Listener>>;
  alive: boolean;
}

export interface Holders {
  /** The holder that receives events now. */
  current(): HolderInfo & { engine: OutboxEngine };
  /** Abandons the current holder and starts the next one; returns both. */
  stop(): { stopped: HolderInfo; current: HolderInfo & { engine: OutboxEngine } };
}

/**
 * Starts the first holder and forwards the scope's events to whichever holder is current. Call
 * at the worker's top level: browsers only dispatch to listeners added while the script runs.
 */
export function startHolders(
  scope: ServiceWorkerGlobalScope,
  config: Omit<OutboxEngineConfig, 'onEvent' | 'fetch'> & {
    leaseMs: number;
    /** Telemetry of every holder, tagged with the holder that emitted it. */
    onEvent: (event: EngineEvent, holderId: string) => void;
  },
): Holders {
  let generation = 0;
  let holder = start();

  for (const type of FORWARDED_EVENTS) {
    scope.addEventListener(type, (event) => {
      for (const listener of holder.listeners.get(type) ?? []) {
        if (typeof listener === 'function') listener.call(scope, event);
        else listener.handleEvent(event);
      }
    });
  }

  function start(): Holder {
    const listeners = new Map<string, Set<Listener>>();
    const next: Partial<Holder> = { listeners, alive: true };
    const { onEvent, ...engineConfig } = config;
    const engine: OutboxEngine = createOutboxEngine({
      ...engineConfig,
      fetch: fetchWhileAlive(() => next.alive),
      onEvent: (event) => onEvent(event, engine.holderId),
    });
    Object.assign(next, {
      engine,
      holderId: engine.holderId,
      generation: ++generation,
      startedAt: Date.now(),
      leaseMs: config.leaseMs,
    });
    engine.attach(standIn(scope, listeners));
    return next as Holder;
  }

  const info = ({ holderId, generation, startedAt, leaseMs }: Holder): HolderInfo => ({
    holderId,
    generation,
    startedAt,
    leaseMs,
  });

  return {
    current: () => ({ ...info(holder), engine: holder.engine }),
    stop() {
      const stopped = holder;
      stopped.alive = false;
      stopped.listeners.clear();
      holder = start();
      return { stopped: info(stopped), current: { ...info(holder), engine: holder.engine } };
    },
  };
}

/** `fetch` for one holder: once the holder is stopped, nothing new is sent or heard back. */
function fetchWhileAlive(alive: () => boolean | undefined): typeof fetch {
  const never = () => new Promise<never>(() => undefined);
  return async (input, init) => {
    if (!alive()) return never();
    try {
      const response = await fetch(input, init);
      return alive() ? response : never();
    } catch (error) {
      if (!alive()) return never();
      throw error;
    }
  };
}

/**
 * The worker's global scope as one holder sees it: everything is the real scope, except that
 * listeners are collected for forwarding instead of being added to the scope itself.
 */
function standIn(
  scope: ServiceWorkerGlobalScope,
  listeners: Map<string, Set<Listener>>,
): ServiceWorkerGlobalScope {
  const add = (type: string, listener: Listener | null) => {
    if (listener === null) return;
    let set = listeners.get(type);
    if (set === undefined) {
      set = new Set();
      listeners.set(type, set);
    }
    set.add(listener);
  };
  const remove = (type: string, listener: Listener | null) => {
    if (listener !== null) listeners.get(type)?.delete(listener);
  };
  return new Proxy(scope, {
    get(target, property) {
      if (property === 'addEventListener') return add;
      if (property === 'removeEventListener') return remove;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
