import type { HistoryRef } from './history.ts';
import type { Json } from './json.ts';
import type { Outcome } from './outcome.ts';
import type { TransportResult } from './ports.ts';
import type { OutboxRow } from './row.ts';
import type { Receipt } from './store.ts';

/**
 * A collection handler turns intents into HTTP requests and knows the collection's rules
 * (SPEC §14). Every method is pure: no I/O, no clock, no randomness.
 */

/** An intent aimed at a server id, ready to become a request. */
export interface IntentInfo {
  collection: string;
  kind: string;
  /** A server id, or `pending:<id>` for a create (whose request does not name it). */
  targetId: string;
  payload: Json | undefined;
  baseRevision: number | null | undefined;
}

/** The request bytes a handler builds; the engine adds the id, fingerprint and key header. */
export interface PreparedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
  /**
   * The header that carries the idempotency key, when not `Idempotency-Key`; null sends no key
   * and no `Content-Digest`, for servers that cannot honour one (the request is then replayed as
   * it is, and a lost answer may mean a second effect). Omit it for the protocol of SPEC §15.
   */
  idempotencyHeader?: string | null;
}

/** What a receipt tells about the record (server id and revision), read from its body. */
export interface ReceiptFacts {
  /**
   * The record's id on the server. Never one that starts with `pending:`, the names of creates
   * not applied yet (§8): such a receipt blocks its row `handler_failed`.
   */
  serverId?: string;
  revision?: number;
}

/** What a conflict response carries (SPEC §10, §15). */
export interface ConflictFacts {
  currentRevision: number | null;
  /** The server copy, only when the server really sent one. */
  remote?: { revision: number; value: Json };
  /** The version a resend would overwrite, only when the server says it keeps it (§10.1). */
  history?: { revision: number };
}

/** How a collection resolves a revision conflict (SPEC §10). */
export type ConflictPolicy =
  | 'rebase'
  | 'block'
  | ((ctx: { row: OutboxRow; conflict: ConflictFacts }) => Json);

/** The rules of one collection: how its intents become requests, merge, rebase and read answers. */
export interface CollectionHandler {
  /** Builds the request for an intent (create, update, delete, or an app-defined kind). */
  toRequest(intent: IntentInfo): PreparedRequest;
  /** Reads the server id and revision out of a success body. */
  readReceipt?(body: Json, status: number): ReceiptFacts;
  /**
   * Where the server serves the version a {@link HistoryRef} names (SPEC §10.1), for `restore`.
   * Without it this collection's conflicts cannot be restored (`history_unavailable`).
   */
  historyUrl?(ref: HistoryRef): string;
  /** Reads the current revision (and a server copy) out of a conflict response. */
  readConflict?(result: TransportResult & { kind: 'response' }): ConflictFacts | undefined;
  /**
   * Merges a later intent into an earlier, never-sent one of the same record (§6). Return the
   * merged payload, `'cancel'` to drop both, or undefined for the default rules.
   */
  coalesce?(
    earlier: IntentInfo,
    later: IntentInfo,
  ): { kind: string; payload: Json | undefined } | 'cancel' | undefined;
  /** Builds the real intent for an intent row once its create's receipt is known (§8). */
  prepareSuccessor?(ctx: {
    intent: OutboxRow;
    predecessor: OutboxRow | undefined;
    receipt: Receipt;
  }): IntentInfo;
  /** Wraps the default classifier (§11). */
  classify?(result: TransportResult, fallback: Outcome): Outcome;
  /** Conflict policy; `rebase` unless set. */
  conflict?: ConflictPolicy;
  /**
   * The kinds this collection takes. Unset: `create`, `update` and `delete`, and any other kind
   * that names its record (`toRequest` decides what it sends). Set, every other kind is refused
   * at enqueue with `invalid_intent`, naming these.
   */
  kinds?: readonly string[];
  /**
   * Whether an edit of a server id must carry its `baseRevision` (SPEC §10): its request sends it
   * as a precondition the server requires (`If-Match`; the reference server answers 428 without
   * one). Set, such an edit without one is refused at enqueue with `invalid_intent` instead of
   * being blocked at send. Edits of `pending:<id>` take the revision from the create's receipt.
   */
  requiresRevision?: boolean;
  /**
   * How this collection's rows travel in batches (SPEC §15.1): through `url` (on the origin of
   * the requests), at most `maxRows` rows and `maxBytes` of items per batch; `false` sends every
   * row alone. Unset: through the endpoint the server advertises, if it does.
   */
  batch?: false | BatchOption;
}

/** A collection's batch endpoint and the limits it takes (SPEC §15.1). */
export interface BatchOption {
  /** The batch endpoint, e.g. `/sync/batch`; relative URLs resolve as request URLs do. */
  url: string;
  maxRows?: number;
  maxBytes?: number;
}
