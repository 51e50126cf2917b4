import type { RowView } from '../../client/index.ts';

/**
 * The fields of an outbox row (SPEC §2) the demo shows. `RowView.row` may be a quarantined raw
 * value, so each field is read defensively rather than trusted.
 */
export interface RowFields {
  id: string;
  kind: string;
  collection: string;
  targetId: string;
  savedAt: number;
  payload: Record<string, unknown>;
  baseRevision?: number | null;
  requestId?: string;
  method?: string;
  url?: string;
  claim?: { holderId: string; expiresAt: number; fence: number };
  attempts: number;
  lastErrorCode?: string;
  nextAttemptAt?: number;
  successorOf?: string;
  blockedCode?: string;
  blockedDetail?: string;
  conflict?: Record<string, unknown>;
}

type Loose = Record<string, unknown>;
const obj = (value: unknown): Loose | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Loose)
    : undefined;
const str = (value: unknown) => (typeof value === 'string' ? value : undefined);
const num = (value: unknown) => (typeof value === 'number' ? value : undefined);

/** Reads the shown fields of a row view. */
export function fieldsOf(view: RowView): RowFields {
  const row = view.row as Loose;
  const request = obj(row.request);
  const claim = obj(row.claim);
  const evidence = obj(row.evidence);
  const fields: RowFields = {
    id: view.id,
    kind: str(row.kind) ?? '?',
    collection: str(row.collection) ?? '?',
    targetId: str(row.targetId) ?? '?',
    savedAt: num(row.savedAt) ?? 0,
    payload: obj(row.payload) ?? {},
    attempts: num(evidence?.attemptCount) ?? 0,
  };
  const baseRevision = row.baseRevision;
  if (typeof baseRevision === 'number' || baseRevision === null) fields.baseRevision = baseRevision;
  if (request) {
    fields.requestId = str(request.requestId);
    fields.method = str(request.method);
    fields.url = str(request.url);
  }
  const holderId = str(claim?.holderId);
  const expiresAt = num(claim?.expiresAt);
  const fence = num(claim?.fence);
  if (holderId !== undefined && expiresAt !== undefined && fence !== undefined) {
    fields.claim = { holderId, expiresAt, fence };
  }
  fields.lastErrorCode = str(evidence?.lastErrorCode);
  fields.nextAttemptAt = num(row.nextAttemptAt);
  fields.successorOf = str(row.successorOf);
  fields.blockedCode = str(row.blockedCode);
  fields.blockedDetail = str(row.blockedDetail);
  fields.conflict = obj(row.conflict);
  return fields;
}

/** How urgent a status is for the person looking at a card: the first one shown wins. */
export const STATUS_ORDER = [
  'blocked',
  'held',
  'sending',
  'deferred',
  'queued',
  'waiting',
  'intent',
  'unknown',
] as const;

/** One-line explanations of every derived status (SPEC §2), shown as tooltips and in the legend. */
export const STATUS_HELP: Record<string, string> = {
  queued: 'waiting for the next flush',
  deferred: 'tried, failed for a transient reason, retried after backoff',
  sending: 'claimed by a holder and in flight now',
  waiting: 'waits for an earlier change of the same note to settle',
  intent: 'an edit of a note the server has not created yet; sent once it has an id',
  held: 'no valid credentials: waits until you sign in again',
  blocked: 'the server refused it; retry or discard it',
  unknown: 'a state this version does not know; kept, never sent',
};
