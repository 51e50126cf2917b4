import {
  type BatchItem,
  fetchMethod,
  HEADER,
  PROBLEM,
  parseIdempotencyKey,
  readBatchRequest,
} from 'sw-outbox/wire';
import { failureAnswer } from '../error-handler.ts';
import { checkBeforeBody, type LedgerLookup } from '../idempotency.ts';
import { carriesAsHttp, NOT_HTTP, readItemBody } from '../item-body.ts';
import { type Answer, JSON_CONTENT_TYPE_HEADER, problemAnswer } from '../problem.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { DROPPED, type KitTarget } from './hooks.ts';
import type { StoredResponse } from './ledger.ts';
import { readRequestBody } from './request-body.ts';
import { pathAndQuery } from './request-target.ts';
import { type HeldWrite, isAnswer, type KitInternals, writeRequest } from './write-route.ts';

/** Where the batch endpoint is and what it takes. */
export interface KitBatch {
  path: string;
  maxItems: number;
  maxBytes: number;
}

/** A path as a request line carries it: visible ASCII, starting with `/`. */
const REQUEST_TARGET = /^\/[\x21-\x7e]*$/;

/**
 * The batch endpoint (SPEC §15.1): batch-level answers first (auth, 413, 400 `batch-malformed`,
 * 503 when the ledger cannot be read), then every item exactly as its request alone — its route,
 * check 1, its body, validation and check 2 — and then the writes that got that far, in item
 * order, each its own check 3 and transaction. A key is held in progress from its check 2 until
 * the batch's writes are done, so a copy of it, in this batch or elsewhere, gets 409. On a
 * ledger whose transactions submitted together run in order on one connection (SQLite), the
 * writes are submitted together and share one commit.
 */
export async function runKitBatch<Tx>(
  kit: KitInternals<Tx>,
  request: Request,
  limits: KitBatch,
): Promise<Answer> {
  const batchTarget: KitTarget = { method: 'POST', route: limits.path, batch: true };
  const principal = await kit.gate(request, batchTarget);
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
  kit.hooks.batchRead?.(request, read.items);
  const keys = new Set<string>();
  for (const entry of read.items) {
    const parsed = parseIdempotencyKey(entry.headers[HEADER.idempotencyKey]);
    if (parsed.kind === 'ok') keys.add(parsed.key);
  }
  let known: Map<string, StoredResponse>;
  try {
    known = keys.size > 0 ? await kit.ledger.lookupMany(principal, [...keys]) : new Map();
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) kit.onError(error);
    return failureAnswer(error);
  }
  // Checks 1 and 2 compare with this one reading; check 3 with the ledger itself.
  const lookup: LedgerLookup = async (_principal, key) => known.get(key);

  const answers: Answer[] = [];
  const held: Array<{ index: number; write: HeldWrite<Tx> }> = [];
  let dropped = false;
  let unavailable: Answer | undefined;
  try {
    for (const [index, entry] of read.items.entries()) {
      let prepared: Answer | HeldWrite<Tx>;
      try {
        prepared = await prepareItem(kit, principal, entry, lookup);
      } catch (error) {
        // An app's `validate` that throws: this item's 500 (or 503), as its request alone gets;
        // the other items are independent of it (SPEC §15.1).
        if (!(error instanceof StoreUnavailableError)) kit.onError(error);
        prepared = failureAnswer(error);
      }
      if ('compiled' in prepared) {
        answers.push(DROPPED);
        held.push({ index, write: prepared });
      } else answers.push(prepared);
    }
    if (held.length > 0) {
      const targets = held.map(({ write }) => write.target);
      const phase = kit.hooks.commit?.(targets, batchTarget);
      await phase?.before?.();
      const results = await kit.commitMany(held.map(({ write }) => write));
      results.forEach((result, position) => {
        answers[held[position]!.index] = result.answer;
      });
      // Storage unavailable for every write of the batch: the batch's own 503.
      if (results.every((result) => result.answer.status === 503)) unavailable = results[0]!.answer;
      const applied = held.filter((_, position) => results[position]!.applied);
      if (applied.length > 0 && phase?.after) {
        dropped = (await phase.after(applied.map(({ write }) => write.target))) === 'drop';
      }
    }
  } finally {
    for (const { write } of held) kit.ctx.inflight.release(principal, write.target.key);
  }
  kit.stats.count(principal, 'batches');
  if (dropped) return DROPPED;
  if (unavailable) return unavailable;
  return {
    status: 200,
    headers: { 'content-type': JSON_CONTENT_TYPE_HEADER },
    body: JSON.stringify({ items: answers }),
  };
}

/**
 * One item up to its write, in the order its request alone meets each step (SPEC §15.1): its
 * route (404, 400, 414), `admitItem`, check 1, its body (415, 413, 400), `If-Match`, validation
 * and check 2, which holds its key in progress. The answer that ends it, or the held write.
 */
async function prepareItem<Tx>(
  kit: KitInternals<Tx>,
  principal: string,
  entry: BatchItem,
  lookup: LedgerLookup,
): Promise<Answer | HeldWrite<Tx>> {
  // The method and path as the item's request alone reaches the kit: `post` is `POST`,
  // `/api/./todos` is `/api/todos`.
  const target = REQUEST_TARGET.test(entry.path) ? pathAndQuery(entry.path) : undefined;
  if (!carriesAsHttp(entry) || target === undefined) {
    return problemAnswer(400, PROBLEM.badRequest, NOT_HTTP);
  }
  const method = fetchMethod(entry.method);
  const found = kit.find(method, target);
  if (!found) return problemAnswer(404, PROBLEM.notFound);
  if (isAnswer(found.params)) return found.params;
  const { route } = found.compiled;
  const refused = kit.hooks.admitItem?.({
    method: route.method,
    route: route.path,
    principal,
    key: '',
  });
  if (refused) return refused;
  const checked = writeRequest(principal, method, target, entry.headers);
  const early = await checkBeforeBody(kit.ctx, checked, lookup);
  if (early) return early;
  const body = readItemBody(entry, kit.bodyLimit);
  if (!body.ok) return body.answer;
  checked.bodyDigest = body.digest;
  return kit.hold(found.compiled, found.params, checked, body.value, lookup);
}
