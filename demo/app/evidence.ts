import type { RowView } from '../../client/index.ts';

/**
 * The full conflict evidence of a resend (SPEC §10) lives on its row only until the row settles;
 * the conflict ledger then keeps a summary without bodies. The demo remembers the evidence it saw
 * on rows, per user in `localStorage`, so the ledger view can show what was overwritten.
 */

/** Evidence by successor row id. */
export type EvidenceById = Record<string, unknown>;

const KEEP = 30;
const key = (user: string) => `sw-outbox-demo:evidence:${user}`;

export function loadEvidence(user: string): EvidenceById {
  try {
    return (JSON.parse(localStorage.getItem(key(user)) ?? '{}') as EvidenceById) ?? {};
  } catch {
    return {};
  }
}

/** Adds the evidence of rows not seen before; returns the same object when nothing is new. */
export function keepEvidence(user: string, known: EvidenceById, rows: RowView[]): EvidenceById {
  const fresh = rows.filter(
    ({ id, row }) => (row as { conflict?: unknown }).conflict !== undefined && !(id in known),
  );
  if (fresh.length === 0) return known;
  const next = Object.fromEntries(
    [
      ...Object.entries(known),
      ...fresh.map(({ id, row }) => [id, (row as { conflict?: unknown }).conflict] as const),
    ].slice(-KEEP),
  );
  localStorage.setItem(key(user), JSON.stringify(next));
  return next;
}
