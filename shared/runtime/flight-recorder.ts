import type { Clock } from '../model/ports.ts';

/**
 * The flight recorder (SPEC §23): a bounded ring of a sender's recent events — claims, sends,
 * answers, settles, flush runs, stalls and what the watchdog did — for bug reports. Events carry
 * ids, fences, statuses and error codes, never credentials or payloads; a field whose name
 * speaks of credentials is dropped anyway, should an event ever grow one. `exportTrace` writes
 * JSON lines, oldest first.
 */

/** One recorded event: when, and the event's own fields. */
export interface TraceEntry {
  at: number;
  type: string;
  [field: string]: unknown;
}

/** The recorder of one sender. */
export interface FlightRecorder {
  record(event: { type: string }): void;
  /** The ring, oldest first. */
  entries(): TraceEntry[];
}

/** How many events the ring keeps by default. */
export const TRACE_SIZE = 500;

/** Field names never written to a trace, whatever the event (credentials, §13). */
const SECRET = /auth|cookie|token|secret|password|header/i;

/** Creates a recorder keeping the last `size` events. */
export function createFlightRecorder(clock: Clock, size = TRACE_SIZE): FlightRecorder {
  const ring: TraceEntry[] = [];
  return {
    record(event) {
      const entry: TraceEntry = { at: clock.now(), type: event.type };
      for (const [key, value] of Object.entries(event)) {
        if (!SECRET.test(key) && key !== 'at') entry[key] = value;
      }
      ring.push(entry);
      if (ring.length > size) ring.shift();
    },
    entries: () => ring.slice(),
  };
}

/** JSON lines of `entries`, one event a line. */
export function traceLines(entries: readonly TraceEntry[]): string {
  return entries.map((entry) => `${JSON.stringify(entry)}\n`).join('');
}
