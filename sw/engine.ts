import { knownOwners } from '../shared/core/known-owners.ts';
import type {
  FlushOptions,
  FlushReport,
  OutboxApi,
  OutboxEvent,
} from '../shared/model/protocol.ts';
import { handOverCredentials } from '../shared/runtime/credentials.ts';
import type { FlushRun } from '../shared/runtime/flush-scheduler.ts';
import { createSender, type Sender, type SenderConfig } from '../shared/runtime/sender.ts';
import { acceptConnections } from './connections.ts';
import { attachTriggers, type TriggerEvent } from './triggers.ts';

/** Everything the engine reports through `onEvent`: the core's telemetry and its triggers. */
export type EngineEvent = OutboxEvent | TriggerEvent;

/** Service-worker configuration (SPEC §14). Only `collections` is required. */
export interface OutboxEngineConfig extends Omit<SenderConfig, 'onEvent'> {
  /** Flush on every push, not only on `{ "type": "sw-outbox.flush" }` payloads (§12). */
  flushOnEveryPush?: boolean;
  /** Call `skipWaiting()` on install, so an update takes over at once (§17). Default true. */
  skipWaiting?: boolean;
  /** Call `clients.claim()` on activate. Default true. */
  clientsClaim?: boolean;
  /** Telemetry: claimed, sent, settled, conflict, storm, held, blocked … and triggers. */
  onEvent?: (event: EngineEvent) => void;
}

/** What triggers and connections share inside one worker start (one holder, §4). */
export interface EngineContext extends Sender {
  readonly config: OutboxEngineConfig;
  emit(event: EngineEvent): void;
  /** Sees the reports of every run, the wake-up timer's included. */
  observeRuns(observer: (reports: FlushReport[], trigger: string) => void): void;
}

/** The engine of one worker start. */
export interface OutboxEngine {
  /** This worker start's holder id (a new one each start, §4). */
  readonly holderId: string;
  /** Wires install/activate, sync, periodicsync, push and message (§12). Call at top level. */
  attach(scope: ServiceWorkerGlobalScope): void;
  /** Flushes the named owners, or every known owner. */
  flush(options?: FlushOptions & { owners?: string[] }): Promise<FlushRun>;
  /** The page API for one owner, for code running in the worker itself. */
  forOwner(owner: string): Promise<OutboxApi>;
  /** Hands over credentials for an owner, as a page's `setAuth` does. */
  setAuth(
    owner: string,
    headers: Record<string, string> | null,
    options?: { persist?: boolean },
  ): Promise<void>;
}

/** Creates the outbox engine for a service worker (SPEC §14). */
export function createOutboxEngine(config: OutboxEngineConfig): OutboxEngine {
  const emit = (event: EngineEvent) => {
    try {
      config.onEvent?.(event);
    } catch (error) {
      config.logger?.warn('onEvent threw', { error: String(error) });
    }
  };
  const observers = new Set<(reports: FlushReport[], trigger: string) => void>();
  const sender = createSender(
    { ...config, onEvent: emit },
    {
      kind: 'sw',
      owners: knownOwners,
      onRun: (reports, trigger) => {
        for (const observer of observers) observer(reports, trigger);
      },
    },
  );
  const context: EngineContext = {
    ...sender,
    config,
    emit,
    observeRuns: (observer) => observers.add(observer),
  };
  return {
    holderId: sender.holderId,
    attach(scope) {
      attachTriggers(scope, context);
      acceptConnections(scope, context);
    },
    flush: (options) => sender.scheduler.run('api', options),
    forOwner: async (owner) => (await sender.core()).forOwner(owner),
    setAuth: async (owner, headers, options) => {
      const api = (await sender.core()).forOwner(owner);
      await handOverCredentials(sender.credentials, api, owner, headers, options);
    },
  };
}
