import type { OutboxHealth, RowView, StallCause, StorageState } from '../model/page-api.ts';
import type { RowStatus } from '../model/row.ts';

/**
 * The health of one owner's queue (SPEC §23) as a pure function of what the runtime gathered:
 * the rows with their status, the sender's progress and the storage's answers. The verdict names
 * why due rows are not going out, so an app can show it and the watchdog can act on it.
 */

/** What a sender knows of its own progress (kept by the watchdog, `runtime/watchdog.ts`). */
export interface SenderProgress {
  /** When a flush last ran; null: none since this sender started. */
  lastRunAt: number | null;
  /** When a flush last got a row through. */
  lastSuccessAt: number | null;
  /** Since when every attempt has failed for want of an answer; null once one succeeds. */
  unreachableSince: number | null;
  /** The last flush stopped because storage refused a write (quota, §11). */
  quota: boolean;
  /** When the sender's wake-up timer fires next, if one is armed (§12). */
  wakeAt: number | null;
}

/** How long a cause may last before it counts as a stall. */
export interface HealthBounds {
  /** Due rows with no flush for this long: `not_attempted` (or `no_sender`). */
  stallAfterMs: number;
  /** Failed attempts with no answer for this long: `unreachable`. */
  unreachableAfterMs: number;
}

/** Everything {@link planHealth} needs; the runtime gathers it. */
export interface HealthInputs {
  now: number;
  views: readonly RowView[];
  progress: SenderProgress;
  senders: OutboxHealth['senders'];
  storage: StorageState;
  bounds: HealthBounds;
}

/** Every display status, in the order counts list them. */
export const ROW_STATUSES: RowStatus[] = [
  'queued',
  'deferred',
  'sending',
  'waiting',
  'intent',
  'held',
  'blocked',
  'unknown',
];

/** The health of a queue, with its verdict (SPEC §23). */
export function planHealth(input: HealthInputs): OutboxHealth {
  const { now, views, progress, bounds } = input;
  const counts = Object.fromEntries(ROW_STATUSES.map((s) => [s, 0])) as Record<RowStatus, number>;
  let oldest: number | null = null;
  let dueSince: number | null = null;
  let next = progress.wakeAt;
  const senders = { ...input.senders };
  for (const { row, status, holderId } of views) {
    counts[status]++;
    if (oldest === null || row.savedAt < oldest) oldest = row.savedAt;
    if (holderId !== undefined)
      senders[holderId.startsWith('sw-') ? 'worker' : 'page'] ??= holderId;
    if (status !== 'queued' && status !== 'deferred') continue;
    const due = row.nextAttemptAt ?? row.savedAt;
    if (due <= now) {
      if (dueSince === null || due < dueSince) dueSince = due;
    } else if (next === null || due < next) next = due;
  }
  const causes: StallCause[] = [];
  // Rows due for longer than the bound while no flush ran for as long: nobody is trying.
  if (
    dueSince !== null &&
    now - dueSince > bounds.stallAfterMs &&
    (progress.lastRunAt === null || now - progress.lastRunAt > bounds.stallAfterMs)
  ) {
    causes.push(
      senders.worker === undefined && senders.page === undefined ? 'no_sender' : 'not_attempted',
    );
  }
  if (progress.quota) causes.push('quota');
  if (counts.held > 0) causes.push('held');
  if (counts.blocked > 0) causes.push('blocked');
  if (
    progress.unreachableSince !== null &&
    now - progress.unreachableSince > bounds.unreachableAfterMs
  ) {
    causes.push('unreachable');
  }
  return {
    at: now,
    counts,
    total: views.length,
    oldestPendingAgeMs: oldest === null ? null : now - oldest,
    lastSuccessAt: progress.lastSuccessAt,
    nextAttemptAt: next,
    senders,
    storage: input.storage,
    stalled: causes[0] ?? null,
    causes,
  };
}
