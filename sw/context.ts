import type { FlushReport, OutboxEvent } from '../shared/model/page-api.ts';
import type { Sender, SenderConfig } from '../shared/runtime/sender.ts';

/**
 * The worker engine's configuration and what its parts share inside one worker start: the
 * engine (`engine.ts`) builds it, the triggers (`triggers.ts`) and the page connections
 * (`connections.ts`) use it.
 */

/** What the engine reports about its triggers through `onEvent`. */
export type TriggerEvent =
  | { type: 'flushed'; trigger: string; holderId: string; remaining: number; stopped?: string }
  /** A `sync` event that left transient failures and asked the browser to try again. */
  | { type: 'sync_retry'; holderId: string; remaining: number }
  | { type: 'trigger_failed'; trigger: string; holderId: string; error: string };

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
  /** Records an event (§23) and hands it to `onEvent`. */
  emit(event: EngineEvent): void;
  /** Sees the reports of every run, the wake-up timer's included. */
  observeRuns(observer: (reports: FlushReport[], trigger: string) => void): void;
}
