import type { EngineEvent } from '../../sw/index.ts';
import { EVENTS_CHANNEL, type LoggedEvent } from '../protocol.ts';

/** How many events the worker remembers for a tab that opens later. */
const KEEP = 200;

/**
 * The engine's telemetry, kept in worker memory and broadcast to open tabs, so a tab opened after
 * the rows synced can still show how they got there (which holder claimed, what failed, what
 * settled). Memory only: it starts empty with each worker start.
 */
export interface EventLog {
  push(event: EngineEvent, holderId: string): void;
  all(): LoggedEvent[];
}

export function createEventLog(): EventLog {
  const channel = new BroadcastChannel(EVENTS_CHANNEL);
  const events: LoggedEvent[] = [];
  let seq = 0;
  return {
    push(event, holderId) {
      const logged: LoggedEvent = { seq: ++seq, at: Date.now(), holderId, event };
      events.push(logged);
      if (events.length > KEEP) events.splice(0, events.length - KEEP);
      channel.postMessage(logged);
    },
    all: () => [...events],
  };
}
