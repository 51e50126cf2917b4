import type { FastifyBaseLogger } from 'fastify';
import type { BatchItem } from 'sw-outbox/wire';
import { HEADER, PROBLEM, parseIdempotencyKey } from 'sw-outbox/wire';
import type { AppContext } from './context.ts';
import { failureAnswer } from './error-handler.ts';
import type { FaultTarget } from './faults.ts';
import { burstAnswer } from './gate.ts';
import { checkBeforeBody, type LedgerLookup, type WriteRequest } from './idempotency.ts';
import { carriesAsHttp, NOT_HTTP, readItemBody } from './item-body.ts';
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
