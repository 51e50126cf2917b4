import {
  BATCH_MIN_LIMITS,
  BATCH_PATH,
  type BatchItem,
  formatBatchLink,
  HEADER,
  ID_PATTERN,
  PROBLEM,
  parseIdempotencyKey,
  readBatchRequest,
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
import { carriesAsHttp, NOT_HTTP, readItemBody } from '../item-body.ts';
import { type Answer, JSON_CONTENT_TYPE_HEADER, problemAnswer } from '../problem.ts';
import { StoreUnavailableError } from '../store/port.ts';
import { checkAfterValidation, requireRevision } from '../write.ts';
import type { Validation } from './answers.ts';
import { isStoredStatus, type LedgerStore } from './ledger.ts';
import { readRequestBody } from './request-body.ts';
import { type RoutePattern, routePattern } from './route-pattern.ts';

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

/** Options of {@link createOutboxKit}. */
export interface OutboxKitOptions<Tx> {
  /** Where the ledger lives: `sqliteLedger(db)` or `await postgresLedger(pool)`. */
  ledger: LedgerStore<Tx>;
  /**
   * Who sent a request (the ledger's principal), or `null` for 401 with `WWW-Authenticate`. It
   * runs before the ledger is read; a throw or a rejected promise is 503 (retry later).
   */
  authenticate(request: Request): string | null | Promise<string | null>;
  /**
   * Runs first, before auth and the ledger: an answer (say `problem(429, …)` with
   * `Retry-After`) refuses the request, a batch as a whole.
   */
  admit?(request: Request): Answer | undefined | Promise<Answer | undefined>;
  /** The `WWW-Authenticate` challenge of a 401. Default `Bearer`. */
  challenge?: string;
  /** Published ledger retention. Default 7 days. */
  retentionMs?: number;
  /** Body limit of a write (and of each batch item's body). Default 64 KiB. */
  bodyLimit?: number;
  /** The batch endpoint (SPEC §15.1); `false` for none. Default `/sync/batch`, 50 items, 256 KiB. */
  batch?: false | { path?: string; maxItems?: number; maxBytes?: number };
  /** Clock of the ledger. */
  now?: () => number;
  /** Told of every unexpected error (answered 500, nothing stored). Default `console.error`. */
  onError?(error: unknown): void;
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
   * endpoint); `undefined` for any other, which the app answers itself.
   */
  handle(request: Request): Promise<Response | undefined>;
  /** {@link handle}, with 404 for a request that is not the kit's (a Fetch API handler). */
  fetch(request: Request): Promise<Response>;
  /** Every method and path the kit answers. */
  endpoints(): KitEndpoint[];
  readonly ledger: LedgerStore<Tx>;
  /** The published retention, in seconds. */
  readonly retentionSeconds: number;
}

interface CompiledRoute<Tx> {
  route: WriteRoute<Tx, unknown>;
  pattern: RoutePattern;
}

/** Creates a kit over a ledger; register write routes with `route`. */
export function createOutboxKit<Tx>(options: OutboxKitOptions<Tx>): OutboxKit<Tx> {
  const { ledger } = options;
  const now = options.now ?? Date.now;
  const onError = options.onError ?? ((error: unknown) => console.error(error));
  const bodyLimit = options.bodyLimit ?? DEFAULT_KIT_BODY_LIMIT;
  const retentionSeconds = Math.floor((options.retentionMs ?? DEFAULT_KIT_RETENTION_MS) / 1000);
  const batch =
    options.batch === false
      ? undefined
      : {
          path: options.batch?.path ?? BATCH_PATH,
          maxItems: options.batch?.maxItems ?? BATCH_MIN_LIMITS.maxItems,
          maxBytes: options.batch?.maxBytes ?? BATCH_MIN_LIMITS.maxBytes,
        };
  const batchLink = batch && formatBatchLink(batch.path, batch);
  const challenge = options.challenge ?? 'Bearer';
  const ctx: CheckContext = { inflight: new InflightKeys(), stats: { count() {} } };
  const routes: Array<CompiledRoute<Tx>> = [];
  const readLedger: LedgerLookup = (principal, key) => ledger.lookup(principal, key);

  /** Every answer of the kit advertises the retention and the batch endpoint. */
  function respond(answer: Answer): Response {
    const headers = new Headers(answer.headers);
    headers.set(RETENTION_HEADER, String(retentionSeconds));
    if (batchLink) headers.set(HEADER.link, batchLink);
    const empty = answer.status === 204 || answer.status === 205 || answer.status === 304;
    return new Response(empty ? null : answer.body, { status: answer.status, headers });
  }

  /** Admission and auth, before anything reads the ledger: the principal, or the answer. */
  async function gate(request: Request): Promise<string | Answer> {
    const refused = await options.admit?.(request);
    if (refused) return refused;
    let principal: string | null;
    try {
      principal = await options.authenticate(request);
    } catch (error) {
      onError(error);
      return problemAnswer(
        503,
        PROBLEM.unavailable,
        { detail: 'authentication is unavailable; retry' },
        { [HEADER.retryAfter]: '1' },
      );
    }
    if (principal === null || principal === '') {
      return problemAnswer(401, PROBLEM.authRequired, {}, { [HEADER.wwwAuthenticate]: challenge });
    }
    return principal;
  }

  /** Validation, check 2 and check 3 with the handler: the same for a request and an item. */
  async function write(
    { route }: CompiledRoute<Tx>,
    params: Record<string, string>,
    request: WriteRequest,
    body: unknown,
    lookup: LedgerLookup,
  ): Promise<Answer> {
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
    const { fingerprint } = checked;
    const at = now();
    try {
      const outcome = await ledger.transact({ principal, key, fingerprint, now: at }, (tx) =>
        route.handle({ ...input, tx, value, key, now: at }),
      );
      switch (outcome.kind) {
        case 'applied':
          return storedAnswer(outcome.response);
        case 'completed':
          return answerCompleted(ctx, request, outcome.response, fingerprint);
        case 'refused':
          return outcome.answer;
        case 'in-progress':
          return problemAnswer(409, PROBLEM.inProgress, {}, { [HEADER.retryAfter]: '1' });
      }
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) onError(error);
      return failureAnswer(error);
    } finally {
      ctx.inflight.release(principal, key);
    }
  }

  function writeRequest(
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

  /** A write sent alone: gate, check 1 before the body, the body, then {@link write}. */
  async function single(
    request: Request,
    compiled: CompiledRoute<Tx>,
    params: Record<string, string>,
    target: string,
  ): Promise<Answer> {
    const principal = await gate(request);
    if (typeof principal !== 'string') return principal;
    const headers = Object.fromEntries(request.headers);
    const checked = writeRequest(principal, request.method, target, headers);
    const early = await checkBeforeBody(ctx, checked, readLedger);
    if (early) return early;
    const body = await readRequestBody(request, bodyLimit);
    if (!body.ok) return body.answer;
    checked.bodyDigest = body.digest;
    return write(compiled, params, checked, body.value, readLedger);
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

  /** One item of a batch, in the order its request alone meets each step (SPEC §15.1). */
  async function item(principal: string, entry: BatchItem, lookup: LedgerLookup): Promise<Answer> {
    if (!carriesAsHttp(entry) || !REQUEST_TARGET.test(entry.path)) {
      return problemAnswer(400, PROBLEM.badRequest, NOT_HTTP);
    }
    const found = find(entry.method, entry.path);
    if (!found) return problemAnswer(404, PROBLEM.notFound);
    if (isAnswer(found.params)) return found.params;
    const checked = writeRequest(principal, entry.method, entry.path, entry.headers);
    const early = await checkBeforeBody(ctx, checked, lookup);
    if (early) return early;
    const body = readItemBody(entry, bodyLimit);
    if (!body.ok) return body.answer;
    checked.bodyDigest = body.digest;
    return write(found.compiled, found.params, checked, body.value, lookup);
  }

  /** The batch endpoint (SPEC §15.1): batch-level answers first, then every item in order. */
  async function runBatch(
    request: Request,
    limits: { maxItems: number; maxBytes: number },
  ): Promise<Answer> {
    const principal = await gate(request);
    if (typeof principal !== 'string') return principal;
    const body = await readRequestBody(request, limits.maxBytes);
    if (!body.ok) return body.answer;
    const read = readBatchRequest(body.value);
    if (!read.ok) return problemAnswer(400, PROBLEM.batchMalformed, { detail: read.detail });
    if (read.items.length > limits.maxItems) {
      return problemAnswer(413, PROBLEM.bodyTooLarge, {
        detail: `a batch carries at most ${limits.maxItems} items`,
      });
    }
    const keys = new Set<string>();
    for (const entry of read.items) {
      const parsed = parseIdempotencyKey(entry.headers[HEADER.idempotencyKey]);
      if (parsed.kind === 'ok') keys.add(parsed.key);
    }
    let known: Map<string, unknown>;
    try {
      known = keys.size > 0 ? await ledger.lookupMany(principal, [...keys]) : new Map();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) onError(error);
      return failureAnswer(error);
    }
    // Checks 1 and 2 compare with this one reading; check 3 with the ledger itself.
    const lookup: LedgerLookup = async (_principal, key) =>
      known.get(key) as Awaited<ReturnType<LedgerLookup>>;
    const answers: Answer[] = [];
    for (const entry of read.items) answers.push(await item(principal, entry, lookup));
    const unavailable = answers.filter((answer) => answer.status === 503);
    const reached = answers.filter(
      (answer) => isStoredStatus(answer.status) || answer.status === 503,
    );
    if (unavailable.length > 0 && unavailable.length === reached.length) return unavailable[0]!;
    return {
      status: 200,
      headers: { 'content-type': JSON_CONTENT_TYPE_HEADER },
      body: JSON.stringify({ items: answers }),
    };
  }

  /** `GET /idempotency` (public) and `GET /idempotency/<key>` (the caller's own keys). */
  async function receipt(request: Request, path: string): Promise<Answer> {
    if (path === RECEIPT_PATH) {
      return {
        status: 200,
        headers: { 'content-type': JSON_CONTENT_TYPE_HEADER },
        body: JSON.stringify({ retentionSeconds, keyPattern: ID_PATTERN.source }),
      };
    }
    const principal = await gate(request);
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
      if (method === 'POST') return runBatch(request, batch);
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

/** A path as a request line carries it: visible ASCII, starting with `/`. */
const REQUEST_TARGET = /^\/[\x21-\x7e]*$/;

function isAnswer(value: Record<string, string> | Answer): value is Answer {
  return typeof value.status === 'number' && typeof value.body === 'string';
}
