import type { CheckContext, LedgerLookup, WriteRequest } from '../idempotency.ts';
import type { Answer } from '../problem.ts';
import type { Validation } from './answers.ts';
import type { KitHooks, KitStats, KitTarget, KitWriteTarget } from './hooks.ts';
import type { Defer, LedgerStore } from './ledger.ts';
import type { RoutePattern } from './route-pattern.ts';

/** The write routes an app registers with the kit, and what the kit's parts share about them. */

/** Methods a write route may have. */
export type WriteMethod = 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a write route's `validate` and `handle` read of a request (alone or a batch item). */
export interface WriteInput {
  /** The principal `authenticate` named: the ledger's key space. */
  principal: string;
  /** Path parameters (`:name`), percent-decoded. */
  params: Record<string, string>;
  /** The parsed JSON body; `undefined` when there was none. */
  body: unknown;
  /** Request headers, lower-case names. */
  headers: Readonly<Record<string, string>>;
  /** The revision `If-Match` named, for a route with `ifMatch: true`. */
  ifMatch: number | undefined;
}

/** What a write handler receives, inside the kit's transaction (SPEC §22.1). */
export interface KitWrite<Tx, V> extends WriteInput {
  /**
   * The app's own database client inside the transaction that also claims the key (a `pg`
   * `PoolClient`, the better-sqlite3 `Database`): write with it, and the effect commits with
   * the ledger entry or not at all.
   */
  tx: Tx;
  /** What `validate` made of the input (the body when there is no `validate`). */
  value: V;
  /** The idempotency key. */
  key: string;
  /** The request's fingerprint (method, path, `If-Match`, body digest) the key is kept with. */
  fingerprint: string;
  /**
   * Hands the kit a statement (run with `tx`) whose result the answer does not need, instead of
   * awaiting it: the kit waits for it before the write counts, nothing commits if it fails, and
   * on a PostgreSQL pool in pipeline mode the claim, the statement, the stored answer and
   * `COMMIT` leave in one round trip. A create whose answer is made from its input fits:
   * `defer(tx.query('INSERT …', [...])); return json(201, todo)`.
   */
  defer: Defer;
  /** The time of the write (ms since the epoch), the ledger's for this key. */
  now: number;
}

/** A write route the kit keeps SPEC §15 for. */
export interface WriteRoute<Tx, V = unknown> {
  method: WriteMethod;
  /** Static segments and `:name` parameters, e.g. `/api/todos/:id`. */
  path: string;
  /** `If-Match: "<revision>"` is required (428 without it, 400 malformed). */
  ifMatch?: boolean;
  /**
   * Validation before check 2 and the transaction: the value `handle` receives, or the answer
   * refusing the request (see `valid`, `invalid`). It must not write anything.
   */
  validate?(input: WriteInput): Validation<V>;
  /**
   * The write, inside the transaction that claims the key: a 2xx answer (`json`) commits the
   * effect and the ledger entry together; any other answer (`revisionConflict`, `notFound`,
   * `problem`) and any throw roll both back, so nothing is stored and the key stays free.
   */
  handle(write: KitWrite<Tx, V>): Answer | Promise<Answer>;
}

/** A write route with its compiled pattern. */
export interface CompiledRoute<Tx> {
  route: WriteRoute<Tx, unknown>;
  pattern: RoutePattern;
}

/** A write that passed validation and check 2: its key is held in progress until released. */
export interface HeldWrite<Tx> {
  compiled: CompiledRoute<Tx>;
  request: WriteRequest;
  input: WriteInput;
  value: unknown;
  fingerprint: string;
  target: KitWriteTarget;
}

/** A write's answer, and whether it applied (an effect). */
export interface Committed {
  answer: Answer;
  applied: boolean;
}

/** What the batch endpoint (batch.ts) uses of the kit. */
export interface KitInternals<Tx> {
  ledger: LedgerStore<Tx>;
  ctx: CheckContext;
  stats: KitStats;
  hooks: KitHooks;
  bodyLimit: number;
  onError(error: unknown): void;
  gate(request: Request, target: KitTarget): Promise<string | Answer>;
  find(
    method: string,
    target: string,
  ): { compiled: CompiledRoute<Tx>; params: Record<string, string> | Answer } | undefined;
  hold(
    compiled: CompiledRoute<Tx>,
    params: Record<string, string>,
    request: WriteRequest,
    body: unknown,
    lookup: LedgerLookup,
  ): Promise<HeldWrite<Tx> | Answer>;
  commit(write: HeldWrite<Tx>): Promise<Committed>;
  /** The writes of a batch, in order, each its own check 3 (see `LedgerStore.transactMany`). */
  commitMany(writes: ReadonlyArray<HeldWrite<Tx>>): Promise<Committed[]>;
}

/** A write as the checks see it, before check 1 has read its key. */
export function writeRequest(
  principal: string,
  method: string,
  url: string,
  headers: WriteRequest['headers'],
): WriteRequest {
  return {
    principal,
    method,
    url,
    headers,
    idempotencyKey: '',
    bodyDigest: null,
    comparedFingerprint: null,
  };
}

/** Whether a route match is a refusal rather than parameters. */
export function isAnswer(value: Record<string, string> | Answer): value is Answer {
  return typeof value.status === 'number' && typeof value.body === 'string';
}
