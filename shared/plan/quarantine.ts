import type { OutboxRow } from '../model/row.ts';
import { isUnreadable, type ReplacePlan, type RowKey } from '../model/store.ts';

/** The `blockedCode` of a quarantined stored value (§2). */
const ROW_CORRUPT = 'row_corrupt';

/**
 * Whether a row is a quarantined stored value: it carries no intent this bundle can send, only
 * the raw value kept for inspection. It is never merged, cancelled or rewritten but by `retry`
 * and `discard` (SPEC §6, G7).
 */
export function isQuarantined(row: OutboxRow): boolean {
  return row.state === 'blocked' && row.blockedCode === ROW_CORRUPT;
}

/** How a value that failed to parse still holds its record: until when, and which record. */
export interface CorruptHold {
  /** When its lease ends by this holder's clock; then it is quarantined. */
  until: number;
  /** Its record, when its `collection` and `targetId` are readable. */
  record?: { collection: string; targetId: string };
}

/**
 * A value that failed to parse but still reads as on the wire (SPEC §4, §6.1, G4, G7):
 * `state: "sending"` under a lease — a claim's `expiresAt`, or a legacy `sentAt` plus the lease —
 * not over yet. Its request may still land, so its record is held (no other row of it goes) and
 * the value is quarantined only once the lease has ended. A lease ending past `now + 2 × leaseMs`
 * is none a holder took (a damaged `expiresAt`; twice the lease leaves room for a holder whose
 * clock is ahead): the value is quarantined at once, so no damage holds a record for ever.
 */
export function corruptInFlight(
  raw: unknown,
  now: number,
  leaseMs: number,
): CorruptHold | undefined {
  if (typeof raw !== 'object' || raw === null || isUnreadable(raw)) return undefined;
  const value = raw as Record<string, unknown>;
  if (value.state !== 'sending') return undefined;
  const finite = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : -Infinity);
  const claim =
    typeof value.claim === 'object' && value.claim !== null
      ? (value.claim as Record<string, unknown>)
      : {};
  // As `leaseEnd` reads a row (§4, §17): the later of the claim's end and a legacy send's.
  const until = Math.max(finite(claim.expiresAt), Math.floor(finite(value.sentAt)) + leaseMs);
  if (!(until > now) || until > now + 2 * leaseMs) return undefined;
  const { collection, targetId } = value;
  return typeof collection === 'string' && typeof targetId === 'string'
    ? { until, record: { collection, targetId } }
    : { until };
}

/**
 * Plans quarantining a stored value that failed to parse (SPEC §2, G7): the row becomes
 * `blocked` / `row_corrupt` with its raw value kept under `raw`. Nothing is dropped and the
 * flush loop goes on. A value stored under a key that is not a string (a number id, say) moves
 * to the string form of that key: a row's id is a string, and a quarantine row left under the
 * old key would fail to parse in its turn.
 */
export function planQuarantine(
  bad: { id: string; key?: unknown; owner: string | undefined; raw: unknown; issues: string },
  ctx: { owner: string; now: number },
): ReplacePlan {
  const record =
    typeof bad.raw === 'object' && bad.raw !== null ? (bad.raw as Record<string, unknown>) : {};
  const text = (key: string) => (typeof record[key] === 'string' ? (record[key] as string) : '?');
  // A value the store could not hand back cannot be kept: say so instead (its key is kept).
  const kept = isUnreadable(bad.raw)
    ? { rawUnavailable: 'the browser could not read the stored value back' }
    : { raw: bad.raw };
  const row: OutboxRow & ({ raw: unknown } | { rawUnavailable: string }) = {
    v: 1,
    id: bad.id,
    owner: bad.owner ?? ctx.owner,
    collection: text('collection'),
    kind: text('kind'),
    targetId: text('targetId'),
    savedAt: typeof record.savedAt === 'number' ? record.savedAt : ctx.now,
    state: 'blocked',
    blockedAt: ctx.now,
    blockedCode: ROW_CORRUPT,
    blockedDetail: bad.issues,
    ...kept,
  };
  const key = (bad.key ?? bad.id) as RowKey;
  if (typeof key === 'string') {
    return {
      owner: ctx.owner,
      expected: [{ id: key, row: bad.raw }],
      put: [row],
      reason: 'quarantine',
    };
  }
  return {
    owner: ctx.owner,
    // The string id must be free: another value under it is not this one's to replace.
    expected: [
      { id: key, row: bad.raw },
      { id: bad.id, row: null },
    ],
    delete: [key],
    put: [row],
    reason: 'quarantine',
  };
}
