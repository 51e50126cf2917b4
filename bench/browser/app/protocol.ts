/**
 * What the bench runner (Node) and the bench page and workers (Chromium) exchange. Types only:
 * the runner reaches the workers through Playwright's `evaluate`, which runs in the worker's
 * global scope, so each worker publishes its hooks on `self.bench`.
 */

import type { FloorVariant } from './floor-variants.ts';

/** One request as both queues send it: the same URL, method, headers and body bytes. */
export interface BenchRequest {
  requestId: string;
  method: string;
  url: string;
  /** Without credentials: each queue adds its own user's `Authorization`. */
  headers: Record<string, string>;
  body: string | null;
}

/** Per-row claim timings of one flush started by {@link OutboxWorkerHooks.firstBatch}. */
export interface FirstBatchSample {
  /** From the flush call to the first `claimed` event, ms. */
  firstClaimMs: number;
  /** From the flush call to the claim that fills the first batch (`concurrency` rows), ms. */
  batchClaimMs: number;
  /** The whole flush: select, claim, the failed sends (offline), settle, ms. */
  flushMs: number;
  claimed: number;
}

/** A database the floor prepared (`app/floor.ts`): its rows, and the JSON bytes of one of each value. */
export interface FloorPrepared {
  rows: number;
  /** A row as the engine stored it, the same row as its claim writes it, its receipt. */
  bytes: { row: number; claimed: number; receipt: number };
}

/** One timed floor run: wall time in the worker, and what it issued. */
export interface FloorRun {
  ms: number;
  transactions: number;
  requests: number;
}

/** One IndexedDB transaction as the tracer saw it (`?trace=1`, `app/trace.ts`). */
export interface TraceTx {
  kind: 'tx';
  /** `IDBDatabase.transaction` was called. */
  open: number;
  /** Its first request succeeded: the transaction was running by then. */
  start?: number;
  /** `complete` (or `abort`) fired. */
  end: number;
  aborted?: boolean;
  mode: string;
  durability: string;
  stores: string[];
  requests: number;
  /** Rows put: id, state, whether it carries a claim; other values as `state: 'other'`. */
  puts: Array<{ id: string; state: string; claimed: boolean }>;
  deletes: number;
}

/** What the tracer records in the worker; times are `timeOrigin + now()`, ms. */
export type TraceEvent =
  | TraceTx
  /** A Comlink call arrived on a page's port (`id`: the enqueue input's id, if any). */
  | { kind: 'call-in'; at: number; callId: string; method: string; id?: string }
  /** A Comlink answer was posted. */
  | { kind: 'call-out'; at: number; callId: string }
  | { kind: 'fetch'; start: number; end: number; url: string; status: number }
  /** Worker messages (`message:<type>`), `sync`, change notices, the engine's events. */
  | { kind: 'event'; at: number; type: string; detail?: string }
  /** The worker's event loop ran nothing else for `ms` from `at`. */
  | { kind: 'stall'; at: number; ms: number };

/** One traced page call: when the page made it and when its promise resolved. */
export interface PageCallTrace {
  id: string;
  start: number;
  end: number;
}

/** Hooks of the outbox worker (`bench/browser/app/outbox-sw.ts`). */
export interface OutboxWorkerHooks {
  readonly holderId: string;
  readonly concurrency: number;
  /** Enqueues `count` creates through the engine's own API (no page round trip, no flush). */
  fill(owner: string, count: number, from: number): Promise<{ ms: number }>;
  /** Hands credentials to the engine, as a page's `setAuth` does. */
  setAuth(owner: string, headers: Record<string, string>): Promise<void>;
  /** The queued requests of an owner in queue order (what the Workbox queue will replay). */
  requests(owner: string): Promise<BenchRequest[]>;
  /** Writes `count` copies of the owner's first row straight into IndexedDB, big transactions. */
  seed(owner: string, count: number): Promise<{ ms: number; total: number }>;
  /** Forced flushes while offline: each selects and claims the first batch, then fails fast. */
  firstBatch(owner: string, reps: number): Promise<FirstBatchSample[]>;
  /** The tracer's events since the last call; empty unless the worker runs with `?trace=1`. */
  trace(): TraceEvent[];
  /**
   * The owner's rows as the engine stored them, in queue order, as one JSON array: a string
   * crosses Playwright's protocol in a fraction of the time 10,000 objects take.
   */
  storedRows(owner: string): Promise<string>;
  /** Keeps `rows` (a JSON array of stored rows) as the IndexedDB floor's templates (`app/floor.ts`). */
  floorTemplates(rows: string): Promise<{ rows: number }>;
  /** A fresh database with `rows` copies of the templates, and `variant`'s writes planned. */
  floorPrepare(variant: FloorVariant, rows: number): Promise<FloorPrepared>;
  /** Runs the prepared variant; only its IndexedDB requests are timed. */
  floorRun(): Promise<FloorRun>;
}

/** Hooks of the Workbox worker (`bench/browser/app/workbox-sw.ts`). */
export interface WorkboxWorkerHooks {
  /** `Queue.pushRequest` for each request in order, each with `authorization` added. */
  push(requests: BenchRequest[], authorization: string): Promise<{ ms: number }>;
  size(): Promise<number>;
}

/** Messages the bench page posts to the Workbox worker (each with a reply port). */
export type WorkboxMessage =
  | { type: 'bench.enqueue'; request: BenchRequest; authorization: string }
  /** Replays until the queue is empty; a failed replay is retried at once, up to `maxRounds`. */
  | { type: 'bench.replay'; maxRounds: number };

export interface WorkboxReply {
  ok: boolean;
  error?: string;
  rounds?: number;
}

/** Which variant of the outbox worker a page registers: the worker URL's query. */
export interface OutboxWorkerOptions {
  /**
   * `false`: one request per row (`batch: false`, the engine before batches); otherwise the
   * engine's default, batches through the endpoint the server advertises (SPEC §15.1).
   */
  batch?: boolean;
  /** The batch linger (`batch.lingerMs`) instead of the engine's default. */
  lingerMs?: number;
  /** Most claims and ACKs in one transaction (`plansPerCommit`) instead of the engine's default. */
  plansPerCommit?: number;
  /** Record a timeline of the worker (`app/trace.ts`). */
  trace?: boolean;
  /**
   * `false`: the page's flush messages and `sync` events never reach the engine, so nothing is
   * sent while the page enqueues (what the enqueue costs without a drain beside it).
   */
  flush?: boolean;
  /**
   * Answer every request in the worker itself (201, as the reference server would) instead of
   * fetching: the drain keeps its claims, settles and notices but makes no request.
   */
  stubFetch?: boolean;
  /**
   * Commit `strict` transactions with `relaxed` durability (an ablation: what the sync to disk
   * costs an enqueue; such an enqueue is not durable when it resolves).
   */
  relaxed?: boolean;
}

/** The outbox worker's URL for `options`: the default worker has no query. */
export function outboxWorkerUrl(options: OutboxWorkerOptions = {}): string {
  const query = new URLSearchParams();
  if (options.batch === false) query.set('batch', '0');
  if (options.lingerMs !== undefined) query.set('linger', String(options.lingerMs));
  if (options.plansPerCommit !== undefined) query.set('commit', String(options.plansPerCommit));
  if (options.trace) query.set('trace', '1');
  if (options.flush === false) query.set('flush', '0');
  if (options.stubFetch) query.set('fetch', 'stub');
  if (options.relaxed) query.set('durability', 'relaxed');
  const search = query.toString();
  return search === '' ? '/outbox-sw.js' : `/outbox-sw.js?${search}`;
}

/** The bench page's API on `window.bench`. */
export interface BenchPageApi {
  /** Registers and connects our outbox worker (`/outbox-sw.js`, `options` as its query). */
  connectOutbox(owner: string, options?: OutboxWorkerOptions): Promise<void>;
  /** Registers the Workbox worker (`/workbox-sw.js`) and waits until it controls the page. */
  connectWorkbox(): Promise<void>;
  setAuth(token: string): Promise<void>;
  /** Sequential enqueues through the page API; returns each call's latency in ms. */
  outboxEnqueueLatency(count: number, from: number): Promise<number[]>;
  /** Sequential enqueues with ids `trace-<from + i>`, each with its page-side times. */
  outboxEnqueueTraced(count: number, from: number): Promise<PageCallTrace[]>;
  /** One `stats()` call through the page API, timed in the page (ms). */
  outboxTimedStats(): Promise<number>;
  /** `count` enqueues with `inFlight` calls outstanding; returns the elapsed ms. */
  outboxEnqueueRate(count: number, inFlight: number, from: number): Promise<number>;
  /** Sequential page → worker → `pushRequest` round trips; each latency in ms. */
  workboxEnqueueLatency(requests: BenchRequest[], authorization: string): Promise<number[]>;
  workboxEnqueueRate(
    requests: BenchRequest[],
    authorization: string,
    inFlight: number,
  ): Promise<number>;
  /** Starts a forced flush of our outbox and returns at once (the drain's trigger). */
  outboxFlush(): void;
  /** Opens an unfiltered live view (`subscribe`), as an app's outbox panel would. */
  outboxSubscribe(): void;
  /** Snapshots the live view delivered so far, and the rows in the latest. */
  outboxSnapshots(): { count: number; rows: number };
  /** Forced flushes until the outbox is empty (response-loss runs); returns the flush count. */
  outboxDrain(maxRounds: number): Promise<number>;
  /** Starts the Workbox replay and returns at once. */
  workboxReplay(maxRounds: number): void;
  /** Resolves when the replay started by {@link workboxReplay} ended. */
  workboxReplayDone(): Promise<WorkboxReply>;
}

/** The note every create carries: a title and a body of about 200 bytes. */
export function notePayload(index: number): { title: string; body: string } {
  return {
    title: `bench note ${index}`,
    body: `row ${index} `.padEnd(200, 'lorem ipsum dolor sit amet '),
  };
}
