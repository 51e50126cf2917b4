import type { Answer } from '../problem.ts';

/** A completed request as the ledger keeps it; `body` is the exact bytes that were sent. */
export interface StoredResponse {
  /** The request fingerprint the key was first used with (method, path, `If-Match`, digest). */
  fingerprint: string;
  status: number;
  /** The `ETag` sent with the response, replayed with it. */
  etag: string | null;
  /** The JSON body text, replayed byte for byte. */
  body: string;
}

/**
 * The kit's storage port (SPEC §22.1): the idempotency ledger, kept in the app's own database so
 * that the key's claim, the app's write and the stored answer commit in one transaction (check 3
 * of SPEC §15). `Tx` is what the app's write handler receives inside that transaction: a `pg`
 * `PoolClient` for PostgreSQL, the better-sqlite3 `Database` for SQLite.
 *
 * The ledger holds only completed, successful (2xx) answers, exactly as the reference server's
 * does (same columns, same table name): nothing is stored for a refusal, a 401/429/503 or a
 * throw, so the same key can always be retried after a failure. Every method may throw
 * `StoreUnavailableError` for a transient fault (answered 503 with `Retry-After`).
 */
export interface LedgerStore<Tx> {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Transactions submitted together run one after another in the order submitted (one
   * connection, as better-sqlite3's): a batch then submits its writes at once and they share a
   * commit. Otherwise a batch waits for each write before the next.
   */
  readonly ordered?: boolean;
  /** Checks 1 and 2: the completed answer for a key, if any. */
  lookup(principal: string, key: string): Promise<StoredResponse | undefined>;
  /** Checks 1 and 2 for the keys of a batch (SPEC §15.1): the completed answers, by key. */
  lookupMany(principal: string, keys: readonly string[]): Promise<Map<string, StoredResponse>>;
  /**
   * Check 3 and the app's write in one transaction: claims `claim.key` for `claim.principal`,
   * runs `work` with the transaction's client, and commits the claim with the answer when it
   * is a success (2xx). A refusal (any other status) or a throw rolls everything back, the
   * app's own writes included. A key that completed elsewhere first is `completed`, untouched.
   */
  transact(claim: LedgerClaim, work: LedgerWork<Tx>): Promise<TransactOutcome>;
  /**
   * The writes of a batch, each exactly as {@link transact} would run it and in order, in as few
   * transactions as the store can without letting one write's failure undo another's: one
   * settled outcome per write. Optional: without it a batch calls `transact` per write.
   */
  transactMany?(
    jobs: ReadonlyArray<{ claim: LedgerClaim; work: LedgerWork<Tx> }>,
  ): Promise<Array<PromiseSettledResult<TransactOutcome>>>;
  /** Deletes at most `batchSize` entries created before `cutoff`; returns how many went. */
  sweepExpired(cutoff: number, batchSize: number): Promise<number>;
}

/**
 * A write inside the ledger's transaction: its answer, from statements run with `tx`. A statement
 * whose result the answer does not need may be handed to `defer` instead of awaited: the ledger
 * waits for it before the write counts as applied, and if it fails nothing commits. On a
 * PostgreSQL pool in pipeline mode the stored answer and `COMMIT` then go out right behind it,
 * in the same round trip.
 */
export type LedgerWork<Tx> = (tx: Tx, defer: Defer) => Answer | Promise<Answer>;

/** Hands the ledger a statement the answer does not wait for (see {@link LedgerWork}). */
export type Defer = (statement: PromiseLike<unknown>) => void;

/** What a claim of check 3 carries: who, which key, which request, and when. */
export interface LedgerClaim {
  principal: string;
  key: string;
  /** The request fingerprint (method, path, `If-Match`, body digest) the key is kept with. */
  fingerprint: string;
  /** Milliseconds since the epoch; retention counts from here. */
  now: number;
}

/**
 * How a transaction ended. `applied`: the app's write and the answer committed. `completed`:
 * the key was already in the ledger, nothing ran (the caller compares fingerprints: a replay or
 * 422). `refused`: the handler answered with a non-success, everything rolled back.
 * `in-progress`: another transaction holds the key's claim longer than the store waits (409).
 */
export type TransactOutcome =
  | { kind: 'applied'; response: StoredResponse }
  | { kind: 'completed'; response: StoredResponse }
  | { kind: 'refused'; answer: Answer }
  | { kind: 'in-progress' };

/** Whether an answer is a success the ledger keeps (SPEC §15: only those are stored). */
export function isStoredStatus(status: number): boolean {
  return status >= 200 && status < 300;
}

/** The ledger entry of a successful answer. */
export function storedResponseOf(fingerprint: string, answer: Answer): StoredResponse {
  return {
    fingerprint,
    status: answer.status,
    etag: answer.headers.etag ?? null,
    body: answer.body,
  };
}
