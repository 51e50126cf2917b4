import type {
  ConflictEvidence,
  ConflictPredecessor,
  RemoteCopy,
} from '../model/conflict-evidence.ts';
import type { CollectionHandler, ConflictFacts, IntentInfo } from '../model/handler.ts';
import type { HistoryRef } from '../model/history.ts';
import type { OutboxRow } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { isClaimMine } from './claim.ts';
import { ledgerChanges } from './conflict-ledger.ts';
import { buildRowRequest } from './identity.ts';

/**
 * Revision conflicts (SPEC §10, seed 003): the evidence of what a resend overwrites and the
 * durable successor planner, which writes the successor's ledger entry with it (the entry and its
 * completion by the ACK are in `conflict-ledger.ts`).
 */

function summarize(row: OutboxRow, now: number): ConflictPredecessor {
  const request = row.request!;
  return {
    requestId: request.requestId,
    ...(row.id === request.requestId ? {} : { rowId: row.id }),
    fingerprint: request.fingerprint,
    baseRevision: row.baseRevision ?? null,
    recordedAt: now,
    request,
  };
}

/**
 * Builds the evidence for a row that met a conflict. A remote copy is claimed only when the
 * server really sent one (`basis: server_detail`), and a history reference only when the server
 * said it keeps the version being overwritten (§10.1); a resend after a later conflict
 * overwrites that later version, so the reference is always the last conflict's.
 */
export function buildConflictEvidence(
  row: OutboxRow,
  conflict: ConflictFacts,
  status: number,
  now: number,
): ConflictEvidence {
  const earlier = row.conflict as ConflictEvidence | undefined;
  const remote: RemoteCopy = conflict.remote
    ? { snapshot: conflict.remote.revision, value: conflict.remote.value }
    : conflict.currentRevision !== null
      ? { revisionOnly: conflict.currentRevision }
      : { absent: 'server_sent_no_revision' };
  const historyRef: HistoryRef | null = conflict.history
    ? {
        kind: 'record_history',
        collection: row.collection,
        recordId: row.targetId,
        supersededRevision: conflict.history.revision,
        access: 'server_lookup',
      }
    : null;
  return {
    version: 1,
    predecessor: earlier?.predecessor ?? summarize(row, now),
    lineage: earlier ? [...earlier.lineage, summarize(row, now)] : [],
    failure: { kind: 'revision_mismatch', currentRevision: conflict.currentRevision, status },
    basis: conflict.remote ? 'server_detail' : 'current_revision_only',
    copy: { local: 'present', base: { absent: 'no_copy_in_row' }, remote },
    historyRef,
    recordedAt: now,
  };
}

/** Who settles the conflict, with which claim, and the successor's new request id. */
export interface ConflictSuccessorContext {
  owner: string;
  holderId: string;
  fence: number;
  now: number;
  successorId: string;
  handler: CollectionHandler;
}

/** A durable successor to write, the row quarantined under `block`, or nothing (claim lost). */
export type ConflictSuccessorPlan =
  | { kind: 'successor'; plan: ReplacePlan; successor: OutboxRow }
  | { kind: 'block'; plan: ReplacePlan }
  | { kind: 'stale' };

/**
 * Plans the durable conflict successor (SPEC §10): verify the claim exactly as an ACK does, then
 * in one `replace` delete the original and write the successor (same record, savedAt and meta;
 * a new request at the current revision; `successorOf`; evidence continuing the attempt count;
 * `conflict`). The dispatcher never sends the new request before this commits. Without a
 * current revision, or under the `block` policy, the row is quarantined with its evidence.
 */
export function planConflictSuccessor(
  current: OutboxRow | undefined,
  raw: unknown,
  conflict: ConflictFacts,
  status: number,
  ctx: ConflictSuccessorContext,
): ConflictSuccessorPlan {
  if (!isClaimMine(current, ctx.holderId, ctx.fence)) return { kind: 'stale' };
  const evidence = buildConflictEvidence(current, conflict, status, ctx.now);
  const expected = [{ id: current.id, row: raw }];
  // The 412 says this key applied nothing: the row's entry (it was a resend) goes, its evidence
  // carried on. Not when the row was re-issued under a new key (§15): its old key may have been.
  const superseded =
    current.request?.requestId !== current.id && current.evidence?.mayHaveApplied ? [] : [current];
  const policy = ctx.handler.conflict ?? 'rebase';
  if (policy === 'block' || conflict.currentRevision === null) {
    const blocked: OutboxRow = {
      ...current,
      state: 'blocked',
      blockedAt: ctx.now,
      blockedCode: 'revision_conflict',
      blockedDetail: `The server is at revision ${conflict.currentRevision ?? 'unknown'}.`,
      ...(current.claim === undefined ? {} : { claim: { ...current.claim, expiresAt: ctx.now } }),
      evidence: {
        ...current.evidence,
        attemptCount: current.evidence?.attemptCount ?? 1,
        lastErrorCode: 'revision_conflict',
      },
      conflict: evidence,
    };
    const { sentAt: _sent, ...row } = blocked;
    return {
      kind: 'block',
      plan: {
        owner: ctx.owner,
        expected,
        put: [row],
        ...ledgerChanges(superseded),
        reason: 'conflict',
      },
    };
  }
  const payload =
    typeof policy === 'function' ? policy({ row: current, conflict }) : current.payload;
  const intent: IntentInfo = {
    collection: current.collection,
    kind: current.kind,
    targetId: current.targetId,
    payload,
    baseRevision: conflict.currentRevision,
  };
  const request = buildRowRequest(
    ctx.handler.toRequest(intent),
    ctx.successorId,
    conflict.currentRevision,
  );
  const {
    claim: _claim,
    sentAt: _sentAt,
    deferredAt: _d,
    nextAttemptAt: _n,
    heldAt: _h,
    blockedAt: _ba,
    blockedCode: _bc,
    blockedDetail: _bd,
    writer: _w,
    overtakenBy: _o,
    ...kept
  } = current;
  // The successor is a new request that never left: what the original's attempts left unknown
  // is not its own (the 412 said the original's key applied nothing).
  // Nor is the age of the original's key: the successor's own first attempt starts it (§15).
  const {
    mayHaveApplied: _unknown,
    firstAttemptAt: _first,
    ...evidenceKept
  } = current.evidence ?? { attemptCount: 1 };
  const successor: OutboxRow = {
    ...kept,
    v: 1,
    id: ctx.successorId,
    state: 'queued',
    ...(payload === undefined ? {} : { payload }),
    baseRevision: conflict.currentRevision,
    request,
    successorOf: current.id,
    evidence: {
      ...evidenceKept,
      attemptCount: current.evidence?.attemptCount ?? 1,
      lastAttemptAt: ctx.now,
      lastErrorCode: 'revision_conflict',
    },
    conflict: evidence,
  };
  return {
    kind: 'successor',
    successor,
    plan: {
      owner: ctx.owner,
      expected: [...expected, { id: successor.id, row: null }],
      put: [successor],
      delete: [current.id],
      // Written with the resend, before it can be sent: no sender can settle it without (G5).
      ...ledgerChanges(superseded, [successor]),
      tombstones: [
        {
          id: current.id,
          owner: ctx.owner,
          reason: 'superseded',
          into: successor.id,
          at: ctx.now,
        },
      ],
      durability: 'strict',
      reason: 'conflict',
    },
  };
}
