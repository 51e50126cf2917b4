import type { Outcome } from '../model/outcome.ts';
import type { BatchRoute, SendDeadline, TransportResult } from '../model/ports.ts';
import type { Observed, OutboxRow, RowRequest } from '../model/row.ts';
import { planClaim } from '../plan/claim.ts';
import type { CoreDeps } from './config.ts';
import type { FlushState } from './flush-state.ts';
import {
  claimContext,
  classifyFor,
  deadlineOf,
  noteClaimed,
  noteLost,
  noteSent,
  sendClaimed,
  sendOne,
  settleAnswer,
  unsentReason,
} from './send-one.ts';
import { type BatchAnswer, settleMany } from './settle-outcome.ts';
import { guardStorage } from './storage-guard.ts';

/**
 * Batches (SPEC §15.1): many rows claimed in one transaction, sent as one request, settled in
 * one transaction, each row checked on its own. The per-row contract of §4 and §5 is unchanged;
 * only the number of requests and commits per row is.
 */

/** Defaults of SPEC §15.1. */
export const DEFAULT_BATCH = { maxRows: 50, maxBytes: 256 * 1024 } as const;

/** Rows gathered for one batch route. */
export interface BatchGroup {
  route: BatchRoute;
  rows: Observed[];
  bytes: number;
}

/**
 * The route a row travels by in a batch, with every limit that applies (the engine's, the
 * handler's, the endpoint's), or undefined when it goes alone: batches are off, the handler
 * says `batch: false`, the transport knows no endpoint for it, or the row alone fills a batch.
 */
export function batchRouteOf(
  deps: CoreDeps,
  owner: string,
  row: OutboxRow,
): BatchRoute | undefined {
  const option = deps.handlers[row.collection]?.batch;
  if (deps.batch === false || option === false || deps.transport.batchRoute === undefined)
    return undefined;
  const route = deps.transport.batchRoute(row.request!, {
    owner,
    ...(option?.url === undefined ? {} : { url: option.url }),
  });
  if (route === undefined) return undefined;
  const maxRows = Math.min(
    route.maxRows,
    deps.batch.maxRows ?? DEFAULT_BATCH.maxRows,
    option?.maxRows ?? Infinity,
  );
  const maxBytes = Math.min(
    route.maxBytes,
    deps.batch.maxBytes ?? DEFAULT_BATCH.maxBytes,
    option?.maxBytes ?? Infinity,
  );
  if (maxRows < 2 || requestBytes(row.request!) > maxBytes) return undefined;
  return { url: route.url, maxRows, maxBytes };
}

/**
 * About the bytes a request takes in a batch: its body, URL and headers, and the item's own
 * punctuation. The transport measures exactly and sends what does not fit separately.
 */
export function requestBytes(request: RowRequest): number {
  let bytes = 64 + request.url.length + (request.body?.length ?? 0);
  for (const [name, value] of Object.entries(request.headers))
    bytes += name.length + value.length + 6;
  return bytes;
}

/**
 * Adds a row to the open group of its route, and returns the groups that are ready: the open
 * one when the row would overflow it (the row then opens the next), or the one it filled.
 */
export function gather(
  groups: Map<string, BatchGroup>,
  route: BatchRoute,
  observed: Observed,
): BatchGroup[] {
  const ready: BatchGroup[] = [];
  const bytes = requestBytes(observed.row.request!);
  let group = groups.get(route.url);
  if (group !== undefined) {
    // The tightest limits of the rows inside: their handlers may differ.
    const limits = {
      url: route.url,
      maxRows: Math.min(group.route.maxRows, route.maxRows),
      maxBytes: Math.min(group.route.maxBytes, route.maxBytes),
    };
    if (group.rows.length >= limits.maxRows || group.bytes + bytes > limits.maxBytes) {
      ready.push(group);
      group = undefined;
    } else group.route = limits;
  }
  if (group === undefined) {
    group = { route, rows: [], bytes: 0 };
    groups.set(route.url, group);
  }
  group.rows.push(observed);
  group.bytes += bytes;
  if (group.rows.length >= group.route.maxRows) {
    ready.push(group);
    groups.delete(route.url);
  }
  return ready;
}

/**
 * Claims the rows of a group in one transaction (each compared on its own: a stale row is
 * skipped), sends those claimed as one batch within the earliest of their deadlines, and settles
 * every row with its own item's answer (SPEC §15.1). One claimed row goes alone; an endpoint
 * that takes no batches gets each row alone, under the claim it has.
 */
export async function sendGroup(
  deps: CoreDeps,
  state: FlushState,
  group: BatchGroup,
): Promise<void> {
  if (group.rows.length === 1) {
    const [only] = group.rows as [Observed];
    await sendOne(deps, state, only.row, only.raw);
    return;
  }
  const ctx = claimContext(deps, state);
  const planned = group.rows.flatMap(({ row, raw }) => {
    const claim = planClaim(row, raw, ctx, state.passedOver.get(row.id));
    return claim.kind === 'claim' ? [claim] : [];
  });
  const results = await guardStorage('flush', () =>
    state.writes.submitMany(planned.map((claim) => claim.plan)),
  );
  const claimed = planned.filter((_, i) => results[i] === 'committed');
  noteLost(
    state,
    planned.filter((_, i) => results[i] !== 'committed').map((claim) => claim.row),
  );
  for (const { row, fence } of claimed) noteClaimed(deps, state, row, fence);
  if (claimed.length === 0) return;
  if (claimed.length === 1) {
    const [only] = claimed as [(typeof claimed)[number]];
    await sendClaimed(deps, state, only.row, only.fence);
    return;
  }

  const deadline = earliest(claimed.map(({ row }) => deadlineOf(deps, row)));
  const answer = await state.sends.run(async () => {
    for (const { row } of claimed) {
      const unsent = unsentReason(deps, state, row, deadline.leaveBy);
      if (unsent !== undefined) return unsent;
    }
    const answers = await deps.transport.sendBatch!(
      group.route,
      claimed.map(({ row }) => row.request!),
      { owner: state.owner, deadline },
    );
    // The network itself failed: stop before the slot passes to rows claimed ahead (§12).
    if (answers !== 'unsupported' && answers.some(isNetworkFailure)) state.stop ??= 'offline';
    return answers;
  });
  if (answer === 'unsupported') {
    await Promise.all(claimed.map(({ row, fence }) => sendClaimed(deps, state, row, fence)));
    return;
  }
  const answers: BatchAnswer[] = claimed.map(({ row, fence }, i) => {
    if (typeof answer === 'string') {
      const unsent: Outcome = { kind: 'transient', code: answer, device: true };
      return { sent: row, fence, result: { kind: 'timeout' }, outcome: unsent };
    }
    const result = answer[i] ?? { kind: 'network_error', message: 'no answer for this item' };
    noteSent(deps, row, fence, result);
    return { sent: row, fence, result, outcome: readOutcome(deps, row, result) };
  });
  await settleMany(deps, state, answers, ({ sent, fence, result, outcome }, reread) =>
    settleAnswer(deps, state, sent, fence, result, outcome, reread),
  );
}

/** The outcome of an item's answer; a handler that throws is `handler_failed`, as alone. */
function readOutcome(deps: CoreDeps, row: OutboxRow, result: TransportResult): Outcome {
  try {
    return classifyFor(deps, row, result);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    deps.logger?.error('handler failed', { id: row.id, error: detail });
    return { kind: 'permanent', code: 'handler_failed', detail };
  }
}

function isNetworkFailure(result: TransportResult): boolean {
  return result.kind === 'network_error' || result.kind === 'timeout';
}

/** The batch leaves only while every row's claim covers it, and is aborted when the first ends. */
function earliest(deadlines: SendDeadline[]): SendDeadline {
  return {
    leaveBy: Math.min(...deadlines.map((d) => d.leaveBy)),
    abortAt: Math.min(...deadlines.map((d) => d.abortAt)),
  };
}
