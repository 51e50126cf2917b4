import type { ErrorCode } from '../model/errors.ts';
import type { CollectionHandler } from '../model/handler.ts';
import type { Json } from '../model/json.ts';
import type { EnqueueResult } from '../model/page-api.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import type { IssueSummary } from '../model/schema-kit.ts';
import type { Receipt, RecordName, ReplacePlan, RowKey, Tombstone } from '../model/store.ts';

/** The inputs and the result of planning one enqueue (SPEC §6, §8). */

/** A validated intent with its id chosen. */
export interface NewIntent {
  id: string;
  collection: string;
  kind: string;
  targetId?: string;
  payload?: Json;
  baseRevision?: number | null;
  meta?: Json;
  /** What an attempt made before the row existed left (§22): the new row carries it, unmerged. */
  evidence?: OutboxRow['evidence'];
}

/** What an enqueue is planned against: whose it is, when, and the collection's handler. */
export interface EnqueueContext {
  owner: string;
  now: number;
  leaseMs: number;
  maxRowBytes: number;
  handler: CollectionHandler;
  /**
   * The keys of every value stored for the record when it was read, corrupt ones included. The
   * plan commits only while the record holds exactly these (§6): an edit committed meanwhile
   * by another tab or holder makes it stale, and it is planned again against that edit.
   */
  recordKeys?: readonly RowKey[];
}

/** What is known about the create a `pending:<C>` target refers to (§8). */
export interface PendingCreateFacts {
  /** The create's current row id: `C`, or the row `C` was coalesced into (tombstones followed). */
  id: string;
  row?: Observed;
  /** The record's server id, once the create settled (§6.1); kept longer than its receipt. */
  name?: RecordName;
  receipt?: Receipt;
  tombstone?: Tombstone;
}

/** What an enqueue does: write one plan, reject with a code, or plan again against a server id. */
export type EnqueuePlan =
  | { kind: 'write'; plan: ReplacePlan; result: EnqueueResult }
  /** `issues` name the fields of an `invalid_intent` (the error's `details.issues`). */
  | { kind: 'reject'; code: ErrorCode; message: string; issues?: IssueSummary[] }
  /** The pending create already has a receipt: plan again against its server id. */
  | { kind: 'retarget'; targetId: string; baseRevision: number | null };
