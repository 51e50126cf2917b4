import type { EngineEvent } from '../sw/index.ts';

/**
 * Messages between the demo page and the demo worker, beyond the library's own: who the worker's
 * current holder is, a request to stop that holder (so a takeover after the lease is visible),
 * and the engine's telemetry broadcast to every open tab.
 */

/** Page → worker (with a reply port): the current holder. */
export const HOLDER_MESSAGE = 'demo.holder';
/** Page → worker (with a reply port): abandon the current holder and start a new one. */
export const STOP_HOLDER_MESSAGE = 'demo.stop-holder';
/** Page → worker (with a reply port): the engine events the worker remembers. */
export const EVENTS_MESSAGE = 'demo.events';
/** BroadcastChannel on which the worker publishes each {@link LoggedEvent}. */
export const EVENTS_CHANNEL = 'sw-outbox-demo:events';

export type DemoMessage =
  | { type: typeof HOLDER_MESSAGE }
  | { type: typeof STOP_HOLDER_MESSAGE }
  | { type: typeof EVENTS_MESSAGE };

/** One holder of the worker: a new one on every worker start and after every stop. */
export interface HolderInfo {
  holderId: string;
  /** 1 for the first holder of this worker start, then counting up with each stop. */
  generation: number;
  startedAt: number;
  leaseMs: number;
}

/** The reply to {@link STOP_HOLDER_MESSAGE}. */
export interface StopHolderReply {
  stopped: HolderInfo;
  current: HolderInfo;
}

/** An engine event as the worker logged it: tagged with the holder that emitted it. */
export interface LoggedEvent {
  seq: number;
  at: number;
  holderId: string;
  event: EngineEvent;
}

/** Whether `value` is one of the demo's page → worker messages. */
export function isDemoMessage(value: unknown): value is DemoMessage {
  const type = (value as { type?: unknown } | null)?.type;
  return type === HOLDER_MESSAGE || type === STOP_HOLDER_MESSAGE || type === EVENTS_MESSAGE;
}
