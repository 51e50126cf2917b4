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
