import type { OutboxRow } from '../model/row.ts';
import { leaseEnd } from './lease.ts';

/**
 * Whether some holder is sending this row right now (SPEC §4): a v1 writer's live claim, or —
 * for legacy v0 writers, which know nothing of claims — `state: "sending"` with a `sentAt`
 * within the lease. Either one suffices: a v0 tab may rewrite a v1 row (keeping the old claim)
 * and start sending it, and a v1 row in flight always satisfies both. Only a `sending` row is in
 * flight: a settled row's claim was expired by the clock of the holder that settled it, and may
 * still look unexpired to a holder whose clock is behind.
 */
export function isRowInFlight(row: OutboxRow, now: number, leaseMs: number): boolean {
  if (row.state !== 'sending') return false;
  return leaseEnd(row, leaseMs) > now;
}

/** Whether the row was ever handed to the network (its outcome may be unknown). */
export function wasAttempted(row: OutboxRow): boolean {
  return (
    (row.evidence?.attemptCount ?? 0) > 0 || row.sentAt !== undefined || row.claim !== undefined
  );
}

/**
 * Whether a claimed row may still leave (SPEC §6.1): no other row of its record is in flight by
 * any holder, the legacy fallback included. Its claim's transaction saw none, but a legacy v0 tab,
 * which knows nothing of claims (§17), may have sent one since; `record` is the record as read
 * after the last await before the wire.
 */
export function isRecordClear(
  record: readonly OutboxRow[],
  sending: OutboxRow,
  now: number,
  leaseMs: number,
): boolean {
  return record.every((row) => row.id === sending.id || !isRowInFlight(row, now, leaseMs));
}
