import type { FlushReport, OutboxEvent, StallCause } from '../model/page-api.ts';
import type { Clock, Logger } from '../model/ports.ts';
import type { HealthBounds, SenderProgress } from '../plan/health.ts';
import { earliestAttempt, needsRetry } from './flush-scheduler.ts';

/**
 * The watchdog of one sender (SPEC §23). It watches every flush run: it keeps the sender's
 * progress for `health()`, reports once each cause only the app can fix (credentials, blocked
 * rows, quota, an unreachable server) — once until a row goes out again — and, while rows wait, keeps one check timer at the
 * moment they are due plus the stall bound. Every run re-arms that check, so it fires only when
 * nothing ran since the rows became due: the wake-up timer or the sync registration was lost.
 * Then it heals (the sender runs a flush; the worker also registers Background Sync again).
 * With nothing waiting no timer is armed: an idle queue costs nothing.
 */

/** The default bounds of SPEC §23: a stall is seen within 30 s, an unreachable server in 5 min. */
export const DEFAULT_HEALTH_BOUNDS: HealthBounds = {
  stallAfterMs: 30_000,
  unreachableAfterMs: 300_000,
};

/** What the watchdog reports through `onEvent`. */
export type StallEvent = Extract<OutboxEvent, { type: 'stalled' }>;

/** Options of {@link createWatchdog}. */
export interface WatchdogOptions {
  clock: Clock;
  bounds: HealthBounds;
  /** Whether the device is online: offline, waiting is no stall (`online` and sync bring it back). */
  online: () => boolean;
  /** Runs a flush (and re-registers sync in a worker) when nothing ran though rows were due. */
  heal: () => void;
  emit: (event: StallEvent) => void;
  logger?: Logger;
}

/** A sender's watchdog: feed it every run; ask it for the progress. */
export interface Watchdog {
  observe(reports: readonly FlushReport[]): void;
  progress(): Omit<SenderProgress, 'wakeAt'>;
  /** Cancels the check timer (a page sender that handed over). */
  stop(): void;
}

/** Creates the watchdog of one sender. */
export function createWatchdog(options: WatchdogOptions): Watchdog {
  const { clock, bounds } = options;
  const state: Omit<SenderProgress, 'wakeAt'> = {
    lastRunAt: null,
    lastSuccessAt: null,
    unreachableSince: null,
    quota: false,
  };
  /** Causes already reported: each is logged once, until a row goes out again. */
  const reported = new Set<StallCause>();
  let check: ReturnType<typeof setTimeout> | undefined;

  const report = (cause: StallCause, action: StallEvent['action']) => {
    if (reported.has(cause)) return;
    reported.add(cause);
    options.logger?.warn(`sw-outbox: queue stalled (${cause})`, { cause, action });
    options.emit({ type: 'stalled', cause, action });
  };

  return {
    observe(reports) {
      const now = clock.now();
      clearTimeout(check);
      state.lastRunAt = now;
      state.quota = reports.some((r) => r.stopped === 'storage');
      if (reports.some((r) => r.succeeded > 0)) {
        // Rows go out again: whatever was reported is over, and may be reported when it recurs.
        reported.clear();
        state.lastSuccessAt = now;
        state.unreachableSince = null;
      } else if (reports.some((r) => r.transient > 0)) {
        state.unreachableSince ??= now;
      }
      if (reports.some((r) => r.held > 0)) report('held', 'reported');
      if (reports.some((r) => r.blocked > 0)) report('blocked', 'reported');
      if (state.quota) report('quota', 'reported');
      if (now - (state.unreachableSince ?? now) > bounds.unreachableAfterMs) {
        report('unreachable', 'reported');
      }
      if (!needsRetry(reports)) return;
      const due = Math.max(earliestAttempt(reports) ?? now, now);
      check = setTimeout(
        () => {
          if (!options.online()) return;
          report('not_attempted', 'healed');
          options.heal();
        },
        due - now + bounds.stallAfterMs,
      );
    },
    progress: () => ({ ...state }),
    stop() {
      clearTimeout(check);
    },
  };
}
