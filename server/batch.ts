import type { FastifyBaseLogger } from 'fastify';
import type { BatchItem } from 'sw-outbox/wire';
import { HEADER, isSendableHeader, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { failureAnswer } from './error-handler.ts';
import type { FaultTarget } from './faults.ts';
import { sha256Digest } from './fingerprint.ts';
import { burstAnswer } from './gate.ts';
import { checkBeforeBody, type LedgerLookup, type WriteRequest } from './idempotency.ts';
import { type Answer, problemAnswer } from './problem.ts';
import { StoreUnavailableError, type WriteCommand } from './store/port.ts';
import { answerWrite, prepareWrite } from './write.ts';
import type { RouteMatch } from './write-route.ts';

/** What a batch's items came to: one answer each, and the faults that act on the whole batch. */
export interface BatchRun {
  answers: Answer[];
  /** Lose the answer: the writes committed, the client never hears of them (G2). */
  drop: boolean;
  /** Hold the answer this long after the commit. */
  delayAfterMs: number;
}

/** How a batch reaches the rest of the server. */
export interface BatchRunner {
  ctx: AppContext;
  route: (method: string, path: string) => RouteMatch;
  /** The body limit of a request alone, which each item's body has too. */
  itemBodyLimit: number;
  /** The batch request as fault rules see it. */
  batchTarget: FaultTarget;
}

/** A write that passed checks 1 and 2 and waits for the batch's transaction. */
interface PendingWrite {
  index: number;
  request: WriteRequest;
  command: WriteCommand;
  target: FaultTarget;
}

/**
 * Runs the items of a batch (SPEC §15.1) for one principal, each exactly as its request alone
 * ({@link prepareItem}, then check 3 inside the store's write). The ledger is read once for every
 * key of the batch (checks 1 and 2 compare with that reading, check 3 with the ledger itself),
 * and every write that gets that far goes to the store in one `writeMany`, in item order. A key
 * is held in progress from its check 2 until the batch's writes are done, so a copy of it, in
 * this batch or elsewhere, gets 409.
 *
 * Throws {@link StoreUnavailableError} (a batch-level 503) when the ledger cannot be read or
 * when storage was unavailable for every write of the batch; otherwise every item has its own
 * answer.
 */
export async function runBatch(
  runner: BatchRunner,
  principal: string,
  items: readonly BatchItem[],
  log: FastifyBaseLogger,
): Promise<BatchRun> {
  const { ctx } = runner;
  const keys = new Set<string>();
  for (const item of items) {
    const parsed = parseIdempotencyKey(item.headers[HEADER.idempotencyKey]);
    if (parsed.kind === 'ok') keys.add(parsed.key);
  }
  const ledger = keys.size > 0 ? await ctx.store.lookupMany(principal, [...keys]) : new Map();
  const lookup: LedgerLookup = async (_principal, key) => ledger.get(key);

  const answers: Answer[] = new Array(items.length);
  const pending: PendingWrite[] = [];
  const faults = ctx.faults.active;
  let delayBeforeMs = 0;
  let delayAfterMs = 0;
  const noteDelay = (target: FaultTarget) => {
    const rule = ctx.faults.take('delay', target);
    if (rule?.phase === 'before-commit') delayBeforeMs = Math.max(delayBeforeMs, rule.ms);
    else if (rule) delayAfterMs = Math.max(delayAfterMs, rule.ms);
  };
  try {
    for (const [index, item] of items.entries()) {
      const prepared = await prepareItem(runner, principal, item, lookup);
      if ('answer' in prepared) {
        answers[index] = prepared.answer;
        continue;
      }
      pending.push({ index, ...prepared });
      if (faults) noteDelay(prepared.target);
    }
    if (pending.length === 0) return { answers, drop: false, delayAfterMs: 0 };
    if (faults) noteDelay(runner.batchTarget);
    if (delayBeforeMs > 0) await ctx.faults.hold(delayBeforeMs, principal);
    const outcomes = await ctx.store.writeMany(pending.map((write) => write.command));
    const unavailable = (outcome: PromiseSettledResult<unknown>) =>
      outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError;
    if (outcomes.every(unavailable)) throw (outcomes[0] as PromiseRejectedResult).reason;

    let applied = false;
    let drop = false;
    for (const [position, write] of pending.entries()) {
      const outcome = outcomes[position]!;
      if (outcome.status === 'rejected') {
        answers[write.index] = failureAnswer(outcome.reason, log);
        continue;
      }
      answers[write.index] = answerWrite(ctx, write.request, write.command, outcome.value);
      if (outcome.value.kind !== 'applied') continue;
      applied = true;
      if (faults && !drop) drop = ctx.faults.take('drop-after-commit', write.target) !== undefined;
    }
    if (applied && faults && !drop) {
      drop = ctx.faults.take('drop-after-commit', runner.batchTarget) !== undefined;
    }
    return { answers, drop, delayAfterMs: applied ? delayAfterMs : 0 };
  } finally {
    for (const write of pending) ctx.inflight.release(principal, write.command.key);
  }
}

/**
 * One item up to its write, in the order its request alone would meet each step: its route
 * (404, 400, 414), the item-level `unavailable` fault, check 1, its body (415, 413, 400), the
 * route's validation (422, 428, 400) and check 2, which holds its key in progress. Either the
 * answer that ends it, or the write it asks for.
 */
async function prepareItem(
  runner: BatchRunner,
  principal: string,
  item: BatchItem,
  lookup: LedgerLookup,
): Promise<{ answer: Answer } | Omit<PendingWrite, 'index'>> {
  const { ctx } = runner;
  if (!carriesAsHttp(item)) return { answer: problemAnswer(400, PROBLEM.badRequest, NOT_HTTP) };
  const matched = runner.route(item.method, item.path);
  if (!matched.ok) return { answer: matched.answer };
  const target: FaultTarget = { method: item.method, route: matched.route.url, user: principal };
  const burst = ctx.faults.active ? ctx.faults.take('unavailable', target) : undefined;
  if (burst) return { answer: burstAnswer(burst) };
  const request: WriteRequest = {
    principal,
    method: item.method,
    url: item.path,
    headers: item.headers,
    idempotencyKey: '',
    bodyDigest: null,
    comparedFingerprint: null,
  };
  const early = await checkBeforeBody(ctx, request, lookup);
  if (early) return { answer: early };
  const body = readItemBody(item, runner.itemBodyLimit);
  if (!body.ok) return body;
  request.bodyDigest = body.digest;
  const result = matched.route.intent({
    params: matched.params,
    body: body.value,
    headers: item.headers,
  });
  if (!result.ok) return result;
  const prepared = await prepareWrite(ctx, request, result.intent, lookup);
  if (prepared.kind === 'answer') return prepared;
  return { request, command: prepared.command, target };
}

/** The answer a request alone gets from the parser for such bytes (server/http-server.ts). */
const NOT_HTTP = { detail: 'the request is not valid HTTP/1.1' };

/**
 * Whether every header of an item could be sent alone. An item holds JSON strings, which can
 * carry what no request could (`fetch` refuses it, Node's parser answers 400) nor every adapter
 * store (PostgreSQL `text` holds no NUL, and `If-Match` is part of the fingerprint).
 */
function carriesAsHttp(item: BatchItem): boolean {
  return Object.entries(item.headers).every(([name, value]) => isSendableHeader(name, value));
}

/** Media types an item's body may have: JSON, as for a request alone. */
const JSON_MEDIA_TYPE = /^\s*application\/json\s*(?:;|$)/i;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

type ItemBody = { ok: true; value: unknown; digest: string | null } | { ok: false; answer: Answer };

/**
 * An item's body as the app's JSON parser reads a request's: a `Content-Type` other than
 * `application/json` is 415 (none at all is 415 too, unless there is no body), a body over the
 * limit is 413, one with no UTF-8 form (a lone surrogate) or that is not JSON is 400. The
 * digest is over the body's UTF-8 bytes; an empty body parses to nothing.
 */
function readItemBody(item: BatchItem, limit: number): ItemBody {
  const contentType = item.headers['content-type'];
  const body = item.body ?? '';
  if (contentType === undefined ? body !== '' : !JSON_MEDIA_TYPE.test(contentType)) {
    return { ok: false, answer: problemAnswer(415, PROBLEM.unsupportedMediaType) };
  }
  if (item.body === null) return { ok: true, value: undefined, digest: null };
  const bytes = Buffer.from(body, 'utf8');
  if (bytes.length > limit) return { ok: false, answer: problemAnswer(413, PROBLEM.bodyTooLarge) };
  if (LONE_SURROGATE.test(body)) {
    const answer = problemAnswer(400, PROBLEM.malformedBody, { detail: 'the body is not UTF-8' });
    return { ok: false, answer };
  }
  const digest = sha256Digest(bytes);
  if (bytes.length === 0) return { ok: true, value: undefined, digest };
  try {
    return { ok: true, value: JSON.parse(body), digest };
  } catch {
    return { ok: false, answer: problemAnswer(400, PROBLEM.malformedBody) };
  }
}
