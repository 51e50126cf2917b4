import type { DecodedRow, Observed, OutboxRow } from '../model/row.ts';

/**
 * Rows of a format version this bundle does not know (SPEC §17): a newer bundle wrote them during
 * an update overlap and sends them. This bundle never sends, quarantines, merges or rewrites
 * them; it shows them as `unknown`, and a new edit of their record waits on them (§6).
 */

/**
 * Whether a row (as {@link unknownVersionRow} made it) is of a newer format version: a whole
 * number above 1 (§17; the codec quarantines any other `v` as corrupt).
 */
export function isUnknownVersion(row: OutboxRow): boolean {
  const v = (row as { v?: unknown }).v;
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 1;
}

/**
 * What planners see of a value of an unknown format version: its fields as stored, with the
 * ones they sort and group by made safe to read. It is observed with its raw value, so any plan
 * that touches it is stale if it changed; no planner writes it.
 */
export function unknownVersionRow(decoded: Extract<DecodedRow, { ok: false }>): Observed {
  const record = decoded.raw as Record<string, unknown>;
  const text = (key: string) => (typeof record[key] === 'string' ? (record[key] as string) : '?');
  const row = {
    ...record,
    id: decoded.id,
    owner: decoded.owner ?? '?',
    collection: text('collection'),
    kind: text('kind'),
    targetId: text('targetId'),
    savedAt: typeof record.savedAt === 'number' ? record.savedAt : 0,
    state: text('state'),
  } as OutboxRow;
  return { row, raw: decoded.raw };
}

/** A stored value as planners take it: a row, one of an unknown version, or nothing (corrupt). */
export function observeStored(decoded: DecodedRow): Observed | undefined {
  if (decoded.ok) return { row: decoded.row, raw: decoded.raw };
  return decoded.unknownVersion ? unknownVersionRow(decoded) : undefined;
}
