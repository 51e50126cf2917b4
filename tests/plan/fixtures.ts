import type { CollectionHandler, IntentInfo } from '../../shared/model/handler.ts';
import type { Observed, OutboxRow } from '../../shared/model/row.ts';
import type { Receipt } from '../../shared/model/store.ts';
import { buildRowRequest } from '../../shared/plan/identity.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/** Shared ground for the planner tables: one owner, one clock reading, one lease. */
export const NOW = 1_000_000;
export const LEASE = 10_000;
export const OWNER = 'user-1';
export const ME = 'holder-A';
export const OTHER = 'holder-B';
export const BUNDLE = 'sw-outbox@test';

export const notes: CollectionHandler = restHandler({ baseUrl: '/api/notes' });

/** The stored request a row would carry for an intent, built the way the engine builds it. */
export function requestFor(info: Omit<IntentInfo, 'collection'>, requestId: string) {
  return buildRowRequest(
    notes.toRequest({ collection: 'notes', ...info }),
    requestId,
    info.baseRevision,
  );
}

/**
 * A v1 `update` row of record `n_1`, queued and never attempted. Overrides replace fields
 * (an override of `undefined` removes one).
 */
export function updateRow(overrides: Partial<OutboxRow> & Record<string, unknown> = {}) {
  const id = (overrides.id as string | undefined) ?? 'notes-000000000000000000000001';
  const payload = overrides.payload ?? { title: 'a' };
  const baseRevision = overrides.baseRevision === undefined ? 3 : overrides.baseRevision;
  const row: OutboxRow = {
    v: 1,
    id,
    owner: OWNER,
    collection: 'notes',
    kind: 'update',
    targetId: 'n_1',
    savedAt: NOW - 1_000,
    state: 'queued',
    payload,
    baseRevision,
    request: requestFor({ kind: 'update', targetId: 'n_1', payload, baseRevision }, id),
  };
  return strip({ ...row, ...overrides });
}

/** A v1 `create` row (target `pending:<id>`), queued and never attempted. */
export function createRow(overrides: Partial<OutboxRow> & Record<string, unknown> = {}) {
  const id = (overrides.id as string | undefined) ?? 'notes-00000000000000000000000c';
  const payload = overrides.payload ?? { title: 'new' };
  const row: OutboxRow = {
    v: 1,
    id,
    owner: OWNER,
    collection: 'notes',
    kind: 'create',
    targetId: `pending:${id}`,
    savedAt: NOW - 2_000,
    state: 'queued',
    payload,
    baseRevision: null,
    request: requestFor(
      { kind: 'create', targetId: `pending:${id}`, payload, baseRevision: null },
      id,
    ),
  };
  return strip({ ...row, ...overrides });
}

/** An intent row (§8): an edit of a pending create, with no request. */
export function intentRow(
  createId: string,
  overrides: Partial<OutboxRow> & Record<string, unknown> = {},
) {
  const row: OutboxRow = {
    v: 1,
    id: 'notes-0000000000000000000000i1',
    owner: OWNER,
    collection: 'notes',
    kind: 'update',
    targetId: `pending:${createId}`,
    savedAt: NOW - 500,
    state: 'queued',
    payload: { title: 'edited' },
    baseRevision: null,
    successorOf: createId,
  };
  return strip({ ...row, ...overrides });
}

/** The row as a holder sees it mid-send: claimed by `holderId` with `fence`, lease live. */
export function claimedBy(
  row: OutboxRow,
  holderId: string,
  fence: number,
  at = NOW - 100,
): OutboxRow {
  return {
    ...row,
    state: 'sending',
    sentAt: at,
    claim: { holderId, expiresAt: at + LEASE, fence },
    evidence: { attemptCount: fence, lastAttemptAt: at },
    writer: { bundle: BUNDLE, at },
  };
}

/** The same row after a transient failure: queued, deferred, backoff set, claim expired. */
export function deferred(row: OutboxRow, fence = 1): OutboxRow {
  const { sentAt: _sent, ...rest } = claimedBy(row, OTHER, fence, NOW - 5_000);
  return {
    ...rest,
    state: 'queued',
    deferredAt: NOW - 4_000,
    nextAttemptAt: NOW + 60_000,
    claim: { holderId: OTHER, expiresAt: NOW - 4_000, fence },
    evidence: { attemptCount: fence, lastAttemptAt: NOW - 5_000, lastErrorCode: 'http_503' },
  };
}

/**
 * The same row after an attempt whose outcome is unknown (`code`: no answer, a 5xx that may follow
 * a commit, `handler_failed`): marked as maybe applied, as the settle planner marks it (§6).
 */
export function unanswered(row: OutboxRow, code = 'network', fence = 1): OutboxRow {
  const settled = deferred(row, fence);
  return {
    ...settled,
    evidence: { ...settled.evidence!, lastErrorCode: code, mayHaveApplied: true },
  };
}

/** The row claimed by a holder that died mid-send: still `sending`, its claim run out. */
export function abandoned(row: OutboxRow): OutboxRow {
  return claimedBy(row, OTHER, 1, NOW - 2 * LEASE);
}

/** A row written by a legacy (v0) tab: no `v`, no claim, `sending` since `sentAt`. */
export function legacySending(row: OutboxRow, sentAt: number): OutboxRow {
  const { v: _v, claim: _c, writer: _w, evidence: _e, ...rest } = row;
  return { ...rest, state: 'sending', sentAt };
}

/** What a planner observes: the parsed row with its raw stored value (a deep copy). */
export function observe(row: OutboxRow): Observed {
  return { row, raw: structuredClone(row) };
}

export function receiptOf(row: OutboxRow, serverId = 'n_77', revision = 1): Receipt {
  return {
    requestId: row.request?.requestId ?? row.id,
    owner: row.owner,
    rowId: row.id,
    collection: row.collection,
    kind: row.kind,
    targetId: row.targetId,
    status: 201,
    body: { id: serverId, revision },
    serverId,
    revision,
    settledAt: NOW,
  };
}

/** Drops keys whose value is `undefined`, so an override can remove a field. */
function strip(row: Record<string, unknown>): OutboxRow {
  return Object.fromEntries(
    Object.entries(row).filter(([, value]) => value !== undefined),
  ) as OutboxRow;
}

/** A copy of a row (or receipt) without the named fields. */
export function without<T extends object>(value: T, ...fields: string[]): T {
  const copy = { ...value } as Record<string, unknown>;
  for (const field of fields) delete copy[field];
  return copy as T;
}
