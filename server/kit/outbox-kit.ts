import {
  BATCH_MIN_LIMITS,
  BATCH_PATH,
  formatBatchLink,
  HEADER,
  ID_PATTERN,
  PROBLEM,
  parseIdempotencyKey,
} from 'sw-outbox/wire';
import { failureAnswer } from '../error-handler.ts';
import {
  answerCompleted,
  type CheckContext,
  checkBeforeBody,
  type LedgerLookup,
  storedAnswer,
  type WriteRequest,
} from '../idempotency.ts';
import { InflightKeys } from '../inflight.ts';
import { type Answer, JSON_CONTENT_TYPE_HEADER, problemAnswer } from '../problem.ts';
import { isStorableText } from '../storable-text.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { checkAfterValidation, requireRevision } from '../write.ts';
import { type KitBatch, runKitBatch } from './batch.ts';
import {
  DROPPED,
  type KitCommitPhase,
  type KitHooks,
  type KitStats,
  type KitTarget,
  NO_STATS,
} from './hooks.ts';
import type { LedgerClaim, LedgerStore, LedgerWork, TransactOutcome } from './ledger.ts';
import { readRequestBody } from './request-body.ts';
import { routePattern } from './route-pattern.ts';
import {
  type Committed,
  type CompiledRoute,
  type HeldWrite,
  isAnswer,
  type KitInternals,
  type WriteInput,
  type WriteRoute,
  writeRequest,
} from './write-route.ts';

/** Ledger retention the kit publishes by default (SPEC §15: at least 7 days). */
export const DEFAULT_KIT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** The body limit of a write by default, as the reference server's. */
export const DEFAULT_KIT_BODY_LIMIT = 64 * 1024;
/**
 * The header on every answer of the kit that advertises the ledger's retention in seconds
 * (SPEC §15: "every API answer advertises it"); `GET /idempotency` describes it in full.
 */
export const RETENTION_HEADER = HEADER.retention;
/** Where the kit answers receipt lookups (SPEC §15). */
export const RECEIPT_PATH = '/idempotency';

/**
 * The longest principal, in UTF-8 bytes, that every ledger keys (SPEC §15): PostgreSQL's index
 * takes about 2.7 KB per entry, the principal and the key (at most 80 characters) together.
 */
const MAX_PRINCIPAL_BYTES = 1024;

const UNKEYABLE = `it holds a NUL or a lone surrogate, or is over ${MAX_PRINCIPAL_BYTES} bytes`;

/**
 * Whether every ledger keys `principal` as itself: PostgreSQL would refuse a NUL and store a lone
 * surrogate as U+FFFD, one principal's entries then answering another's; and it is bounded.
 */
function isKeyablePrincipal(principal: string): boolean {
  if (!isStorableText(principal)) return false;
  // At most 3 bytes a UTF-16 unit: most principals need no encoding to pass.
  return (
    principal.length * 3 <= MAX_PRINCIPAL_BYTES ||
    new TextEncoder().encode(principal).length <= MAX_PRINCIPAL_BYTES
  );
}

/** Options of {@link createOutboxKit}. */
export interface OutboxKitOptions<Tx> {
  /** Where the ledger lives: `sqliteLedger(db)` or `await postgresLedger(pool)`. */
  ledger: LedgerStore<Tx>;
  /**
   * Who sent a request (the ledger's principal), or `null` for 401 with `WWW-Authenticate`, or
   * an answer of its own (a 401 with a more precise challenge, say). It runs before the ledger is
   * read; a throw or a rejected promise is 503 (retry later). `target` says which route.
   */
  authenticate(
    request: Request,
    target: KitTarget,
  ): string | null | Answer | Promise<string | null | Answer>;
  /**
   * Runs first, before auth and the ledger: an answer (say `problem(429, …)` with
   * `Retry-After`) refuses the request, a batch as a whole.
   */
  admit?(request: Request, target: KitTarget): Answer | undefined | Promise<Answer | undefined>;
  /** The `WWW-Authenticate` challenge of a 401. Default `Bearer`. */
  challenge?: string;
  /** Published ledger retention. Default 7 days. */
  retentionMs?: number;
  /** Body limit of a write (and of each batch item's body). Default 64 KiB. */
  bodyLimit?: number;
  /** The batch endpoint (SPEC §15.1); `false` for none. Default `/sync/batch`, 50 items, 256 KiB. */
  batch?: false | { path?: string; maxItems?: number; maxBytes?: number };
  /** Clock of the ledger, in ms since the epoch (a fraction is dropped). Default `Date.now`. */
  now?: () => number;
  /** Told of every unexpected error (answered 500, nothing stored). Default `console.error`. */
  onError?(error: unknown): void;
  /** Counters of replays, 409s, 422s, conflicts and effects. Default none. */
  stats?: KitStats;
  /** Steps around the kit's own (fault injection, logs); see {@link KitHooks}. */
  hooks?: KitHooks;
}

/** A route the kit answers, for adapters that register routes (Fastify). */
export interface KitEndpoint {
  method: string;
  path: string;
}

/**
 * The server kit (SPEC §22.1): SPEC §15 and §15.1 kept for the write routes an app registers,
 * over the Fetch API's `Request` and `Response`, so any framework can put it in front of its
 * own routes and database.
 */
export interface OutboxKit<Tx> {
  /** Registers a write route; returns the kit for chaining. */
  route<V = unknown>(route: WriteRoute<Tx, V>): OutboxKit<Tx>;
  /**
   * Answers a request that is the kit's (a registered write, a receipt lookup, the batch
   * endpoint); `undefined` for any other, which the app answers itself. A `Response.error()`
   * (type `"error"`) is an answer a hook chose to lose: the adapter cuts the connection.
   */
  handle(request: Request): Promise<Response | undefined>;
  /** {@link handle}, with 404 for a request that is not the kit's (a Fetch API handler). */
  fetch(request: Request): Promise<Response>;
  /**
   * {@link handle} as a plain answer (status, lower-case headers, body text) for an adapter that
   * writes answers itself and would only take a `Response` apart again; `'drop'` for an answer a
   * hook chose to lose (cut the connection).
   */
  answer(request: Request): Promise<Answer | 'drop' | undefined>;
  /** Every method and path the kit answers. */
  endpoints(): KitEndpoint[];
  readonly ledger: LedgerStore<Tx>;
  /** The published retention, in seconds. */
  readonly retentionSeconds: number;
  /** Keys held in progress by this process right now (between check 2 and the answer). */
  readonly inProgress: number;
}

export type { KitWrite, WriteInput, WriteMethod, WriteRoute } from './write-route.ts';

/** Creates a kit over a ledger; register write routes with `route`. */
export function createOutboxKit<Tx>(options: OutboxKitOptions<Tx>): OutboxKit<Tx> {
  const { ledger } = options;
  const now = options.now ?? Date.now;
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const bodyLimit = options.bodyLimit ?? DEFAULT_KIT_BODY_LIMIT;
  const retentionSeconds = Math.floor((options.retentionMs ?? DEFAULT_KIT_RETENTION_MS) / 1000);
  const batch: KitBatch | undefined =
    options.batch === false
      ? undefined
      : {
          path: options.batch?.path ?? BATCH_PATH,
          maxItems: options.batch?.maxItems ?? BATCH_MIN_LIMITS.maxItems,
          maxBytes: options.batch?.maxBytes ?? BATCH_MIN_LIMITS.maxBytes,
        };
  const batchLink = batch && formatBatchLink(batch.path, batch);
  const challenge = options.challenge ?? 'Bearer';
  const stats = options.stats ?? NO_STATS;
  const hooks = options.hooks ?? {};
  const ctx: CheckContext = { inflight: new InflightKeys(), stats };
  const routes: Array<CompiledRoute<Tx>> = [];
  const readLedger: LedgerLookup = (principal, key) => ledger.lookup(principal, key);

  /** Every answer of the kit advertises the retention and the batch endpoint. */
  function respond(answer: Answer): Response {
    if (answer === DROPPED) return Response.error();
    const published = publish(answer);
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.body, {
      status: answer.status,
      headers: published.headers,
    });
  }

  /** An answer with the retention and the batch endpoint advertised. */
  function publish(answer: Answer): Answer {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers)) headers[name.toLowerCase()] = value;
    headers[RETENTION_HEADER] = String(retentionSeconds);
    if (batchLink) headers[HEADER.link] = batchLink;
    return { status: answer.status, headers, body: answer.body };
  }

  /** Admission and auth, before anything reads the ledger: the principal, or the answer. */
  async function gate(request: Request, target: KitTarget): Promise<string | Answer> {
    const refused = await options.admit?.(request, target);
    if (refused) return refused;
    let principal: string | null | Answer;
    try {
      principal = await options.authenticate(request, target);
    } catch (error) {
      onError(error);
      return problemAnswer(
        503,
        PROBLEM.unavailable,
        { detail: 'authentication is unavailable; retry' },
        { [HEADER.retryAfter]: '1' },
      );
    }
    if (principal !== null && typeof principal === 'object') return principal;
    if (principal === null || principal === '') {
      return problemAnswer(401, PROBLEM.authRequired, {}, { [HEADER.wwwAuthenticate]: challenge });
    }
    if (!isKeyablePrincipal(principal)) {
      onError(new TypeError(`authenticate returned a principal no ledger can key: ${UNKEYABLE}`));
      return problemAnswer(
        401,
        PROBLEM.authRequired,
        {
          detail: `these credentials name a principal this server cannot keep writes for: ${UNKEYABLE}`,
        },
        { [HEADER.wwwAuthenticate]: challenge },
      );
    }
    return principal;
  }

  /** `If-Match`, validation and check 2: the write with its key held, or the answer. */
  async function hold(
    compiled: CompiledRoute<Tx>,
    params: Record<string, string>,
    request: WriteRequest,
    body: unknown,
    lookup: LedgerLookup,
  ): Promise<HeldWrite<Tx> | Answer> {
    const { route } = compiled;
    let ifMatch: number | undefined;
    if (route.ifMatch) {
      const revision = requireRevision(request.headers);
      if (typeof revision !== 'number') return revision;
      ifMatch = revision;
    }
    const headers = request.headers as Readonly<Record<string, string>>;
    const input: WriteInput = { principal: request.principal, params, body, headers, ifMatch };
    let value: unknown = body;
    if (route.validate) {
      const validation = route.validate(input);
      if (!validation.ok) return validation.answer;
      value = validation.value;
    }
    const checked = await checkAfterValidation(ctx, request, lookup);
    if (checked.kind === 'answer') return checked.answer;
    const { principal, idempotencyKey: key } = request;
    const target = { method: route.method, route: route.path, principal, key };
    return { compiled, request, input, value, fingerprint: checked.fingerprint, target };
  }

  /** Check 3 with the handler, for a held write (its key is released by the caller). */
  async function commit(write: HeldWrite<Tx>): Promise<Committed> {
    const { claim, work } = jobOf(write);
    try {
      return settle(write, await ledger.transact(claim, work));
    } catch (error) {
      return failed(error);
    }
  }

  /** The writes of a batch: in one call to the ledger when it can take them together. */
  async function commitMany(writes: ReadonlyArray<HeldWrite<Tx>>): Promise<Committed[]> {
    if (writes.length > 1 && ledger.transactMany) {
      let results: Array<PromiseSettledResult<TransactOutcome>>;
      try {
        results = await ledger.transactMany(writes.map(jobOf));
      } catch (error) {
        return writes.map(() => failed(error));
      }
      return results.map((result, index) =>
        result.status === 'fulfilled'
          ? settle(writes[index]!, result.value)
          : failed(result.reason),
      );
    }
    if (ledger.ordered) return Promise.all(writes.map(commit));
    const committed: Committed[] = [];
    for (const write of writes) committed.push(await commit(write));
    return committed;
  }

  /** Check 3's claim and the handler of a held write, as the ledger takes them. */
  function jobOf(write: HeldWrite<Tx>): { claim: LedgerClaim; work: LedgerWork<Tx> } {
    const { compiled, request, input, value, fingerprint } = write;
    const { principal, idempotencyKey: key } = request;
    // Whole milliseconds: PostgreSQL's `bigint` refuses a fraction that SQLite would keep.
    const at = Math.floor(now());
    return {
      claim: { principal, key, fingerprint, now: at },
      work: (tx, defer) =>
        compiled.route.handle({ ...input, tx, value, key, fingerprint, now: at, defer }),
    };
  }

  /** The answer to a write the ledger finished (SPEC §15). */
  function settle(write: HeldWrite<Tx>, outcome: TransactOutcome): Committed {
    const { request, fingerprint } = write;
    const { principal, idempotencyKey: key } = request;
    switch (outcome.kind) {
      case 'applied':
        stats.effect?.(principal, key);
        return { answer: storedAnswer(outcome.response), applied: true };
      case 'completed':
        return {
          answer: answerCompleted(ctx, request, outcome.response, fingerprint),
          applied: false,
        };
      case 'refused':
        if (outcome.answer.status === 412) stats.count(principal, 'conflicts');
        return { answer: outcome.answer, applied: false };
      case 'in-progress':
        stats.count(principal, 'inProgress');
        return {
          answer: problemAnswer(409, PROBLEM.inProgress, {}, { [HEADER.retryAfter]: '1' }),
          applied: false,
        };
    }
  }

  /** A write that failed in the ledger: 503 when storage is unavailable, else 500 (told). */
  function failed(error: unknown): Committed {
    if (!(error instanceof StoreUnavailableError)) onError(error);
    return { answer: failureAnswer(error), applied: false };
  }

  /** A write sent alone: gate, check 1 before the body, the body, then the write. */
  async function single(
    request: Request,
    compiled: CompiledRoute<Tx>,
    params: Record<string, string>,
    target: string,
  ): Promise<Answer> {
    const { method, path } = compiled.route;
    const principal = await gate(request, { method, route: path, batch: false });
    if (typeof principal !== 'string') return principal;
    const headers = Object.fromEntries(request.headers);
    const checked = writeRequest(principal, request.method, target, headers);
    const early = await checkBeforeBody(ctx, checked, readLedger);
    if (early) return early;
    const body = await readRequestBody(request, bodyLimit);
    if (!body.ok) return body.answer;
    checked.bodyDigest = body.digest;
    const held = await hold(compiled, params, checked, body.value, readLedger);
    if (!('compiled' in held)) return held;
    let result: { answer: Answer; applied: boolean };
    let phase: KitCommitPhase | undefined;
    try {
      // Inside the `try`: a hook that throws must not leave the key held (409 for ever).
      phase = hooks.commit?.([held.target], undefined);
      await phase?.before?.();
      result = await commit(held);
    } finally {
      ctx.inflight.release(principal, checked.idempotencyKey);
    }
    if (result.applied && phase?.after) {
      if ((await phase.after([held.target])) === 'drop') return DROPPED;
    }
    return result.answer;
  }

  /** The route and parameters of a method and path; `undefined` when no route has them. */
  function find(method: string, target: string) {
    for (const compiled of routes) {
      if (compiled.route.method !== method) continue;
      const params = compiled.pattern.match(target);
      if (params !== undefined) return { compiled, params };
    }
    return undefined;
  }

  const internals: KitInternals<Tx> = {
    ledger,
    ctx,
    stats,
    hooks,
    bodyLimit,
    onError,
    gate,
    find,
    hold,
    commit,
    commitMany,
  };

  /** `GET /idempotency` (public) and `GET /idempotency/<key>` (the caller's own keys). */
  async function receipt(request: Request, path: string): Promise<Answer> {
    if (path === RECEIPT_PATH) {
      return {
        status: 200,
        headers: { 'content-type': JSON_CONTENT_TYPE_HEADER },
        body: JSON.stringify({ retentionSeconds, keyPattern: ID_PATTERN.source }),
      };
    }
    const target = { method: 'GET', route: `${RECEIPT_PATH}/:key`, batch: false };
    const principal = await gate(request, target);
    if (typeof principal !== 'string') return principal;
    let raw: string;
    try {
      raw = decodeURIComponent(path.slice(RECEIPT_PATH.length + 1));
    } catch {
      raw = '';
    }
    const parsed = parseIdempotencyKey(raw);
    const missing = problemAnswer(404, PROBLEM.notFound, { detail: 'no such key' });
    if (parsed.kind !== 'ok') return missing;
    const stored = await ledger.lookup(principal, parsed.key);
    if (!stored) return missing;
    // The stored body is JSON text: spliced in, not parsed and serialised again.
    return {
      status: 200,
      headers: { 'content-type': JSON_CONTENT_TYPE_HEADER },
      body: `{"status":${stored.status},"body":${stored.body}}`,
    };
  }

  /** The kit's answer to a request, or `undefined` when it is not the kit's. */
  async function answer(request: Request): Promise<Answer | undefined> {
    const url = new URL(request.url);
    const path = url.pathname;
    const { method } = request;
    if (batch && path === batch.path) {
      if (method === 'POST') return runKitBatch(internals, request, batch);
      if (method === 'OPTIONS') {
        return { status: 204, headers: { allow: 'POST, OPTIONS' }, body: '' };
      }
      return undefined;
    }
    if (method === 'GET' && (path === RECEIPT_PATH || path.startsWith(`${RECEIPT_PATH}/`))) {
      if (path.indexOf('/', RECEIPT_PATH.length + 1) === -1) return receipt(request, path);
      return undefined;
    }
    const found = find(method, path + url.search);
    if (!found) return undefined;
    if (isAnswer(found.params)) return found.params;
    return single(request, found.compiled, found.params, path + url.search);
  }

  const kit: OutboxKit<Tx> = {
    ledger,
    retentionSeconds,
    get inProgress() {
      return ctx.inflight.size;
    },
    route(route) {
      routes.push({ route: route as WriteRoute<Tx, unknown>, pattern: routePattern(route.path) });
      return kit;
    },
    async handle(request) {
      try {
        const answered = await answer(request);
        return answered && respond(answered);
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) onError(error);
        return respond(failureAnswer(error));
      }
    },
    async fetch(request) {
      return (await kit.handle(request)) ?? respond(problemAnswer(404, PROBLEM.notFound));
    },
    async answer(request) {
      let answered: Answer | undefined;
      try {
        answered = await answer(request);
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) onError(error);
        answered = failureAnswer(error);
      }
      if (answered === DROPPED) return 'drop';
      return answered && publish(answered);
    },
    endpoints() {
      const list: KitEndpoint[] = routes.map(({ route }) => ({
        method: route.method,
        path: route.path,
      }));
      list.push(
        { method: 'GET', path: RECEIPT_PATH },
        { method: 'GET', path: `${RECEIPT_PATH}/:key` },
      );
      if (batch)
        list.push({ method: 'POST', path: batch.path }, { method: 'OPTIONS', path: batch.path });
      return list;
    },
  };
  return kit;
}
