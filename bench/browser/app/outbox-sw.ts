import { FLUSH_MESSAGE } from '../../../shared/model/connection.ts';
import { PENDING_PREFIX } from '../../../shared/model/pending.ts';
import type { OutboxStore, RowCursor } from '../../../shared/model/store.ts';
import { openIdbStore } from '../../../shared/store/index.ts';
import { createOutboxEngine, restHandler } from '../../../sw/index.ts';
import { createFloorBench } from './floor.ts';
import {
  type BenchRequest,
  type FirstBatchSample,
  notePayload,
  type OutboxWorkerHooks,
} from './protocol.ts';
import { installTrace } from './trace.ts';

/**
 * The bench's outbox worker: the engine as an app would configure it (the `notes` collection of
 * the reference server through `restHandler`, concurrency 4, default lease, scan and batch
 * sizes, batches through the endpoint the server advertises), plus hooks on `self.bench` that
 * the runner calls through Playwright to fill, seed and time it.
 *
 * The worker URL's query picks a variant (`outboxWorkerUrl`): `batch=0` sends one request per
 * row, `linger=<ms>` sets the batch linger, `commit=<n>` the most claims and ACKs in one
 * transaction; `trace=1` records a timeline of the worker
 * (`trace.ts`), installed before the engine exists so that every transaction is seen; `flush=0`
 * keeps the page's flush messages and `sync` from the engine; `fetch=stub` answers every
 * request in the worker; `durability=relaxed` commits strict transactions relaxed.
 */

const CONCURRENCY = 4;
const scope = globalThis as unknown as ServiceWorkerGlobalScope & { bench?: OutboxWorkerHooks };
const query = new URL(scope.location.href).searchParams;
const tracer = query.get('trace') === '1' ? installTrace(scope) : undefined;

if (query.get('flush') === '0') {
  // Registered before the engine's listeners: they never see these events.
  const swallow = (event: Event) => event.stopImmediatePropagation();
  scope.addEventListener('sync', swallow);
  scope.addEventListener('message', (event) => {
    if ((event.data as { type?: unknown } | null)?.type === FLUSH_MESSAGE) swallow(event);
  });
}

if (query.get('durability') === 'relaxed') {
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, stores, mode, options) {
    const relaxed =
      options?.durability === 'strict' ? { ...options, durability: 'relaxed' as const } : options;
    return transaction.call(this, stores, mode, relaxed);
  } as typeof transaction;
}

let stubbed = 0;
/** The reference server's answer to a create, made here: no request leaves the worker. */
const stubFetch: typeof fetch = async () =>
  new Response(JSON.stringify({ id: `stub-${++stubbed}`, revision: 1 }), {
    status: 201,
    headers: { 'content-type': 'application/json', etag: '"1"' },
  });

/** `batch=0`: one request per row; `linger=<ms>`: the batch linger; neither: the defaults. */
const batch =
  query.get('batch') === '0'
    ? (false as const)
    : query.has('linger')
      ? { lingerMs: Number(query.get('linger')) }
      : undefined;

let onClaimed: (() => void) | undefined;
const engine = createOutboxEngine({
  collections: {
    notes: restHandler({ baseUrl: '/api/notes', ...(batch === false ? { batch } : {}) }),
  },
  ...(batch === undefined ? {} : { batch }),
  concurrency: CONCURRENCY,
  ...(query.has('commit') ? { plansPerCommit: Number(query.get('commit')) } : {}),
  ...(query.get('fetch') === 'stub' ? { fetch: stubFetch } : {}),
  onEvent(event) {
    if (event.type === 'claimed') onClaimed?.();
    if (tracer !== undefined) {
      const id = 'id' in event ? event.id : 'trigger' in event ? event.trigger : undefined;
      tracer.note(`engine:${event.type}`, id);
    }
  },
});
engine.attach(scope);

/** A second connection for the bench's own reads and bulk writes; no change notices. */
let benchStore: Promise<OutboxStore> | undefined;
const store = () => {
  benchStore ??= openIdbStore({ broadcast: false });
  return benchStore;
};

interface StoredRow {
  id: string;
  targetId?: string;
  savedAt: number;
  request?: BenchRequest & { fingerprint: string };
}

async function* rowsOf(owner: string, batch = 1000): AsyncGenerator<StoredRow[]> {
  const db = await store();
  let after: RowCursor | undefined;
  for (;;) {
    const rows = (await db.scan(
      owner,
      after ? { after, limit: batch } : { limit: batch },
    )) as StoredRow[];
    if (rows.length > 0) yield rows;
    if (rows.length < batch) return;
    const last = rows[rows.length - 1]!;
    after = { savedAt: last.savedAt, id: last.id };
  }
}

/** Runs `count` tasks with at most `width` outstanding. */
async function pool(count: number, width: number, task: (i: number) => Promise<unknown>) {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane));
}

const SEED_TRANSACTION_ROWS = 10_000;

/** The owner's rows, counted on the `[owner, savedAt, id]` index without reading them. */
function countRows(owner: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('sw-outbox');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const count = db
        .transaction('rows')
        .objectStore('rows')
        .index('by_owner_savedAt')
        .count(IDBKeyRange.bound([owner], [owner, []]));
      count.onsuccess = () => {
        db.close();
        resolve(count.result);
      };
      count.onerror = () => reject(count.error);
    };
  });
}

const floor = createFloorBench(engine.holderId);

scope.bench = {
  holderId: engine.holderId,
  concurrency: CONCURRENCY,

  async fill(owner, count, from) {
    const api = await engine.forOwner(owner);
    const started = performance.now();
    await pool(count, 8, (i) =>
      api.enqueue({ collection: 'notes', kind: 'create', payload: notePayload(from + i) }),
    );
    return { ms: performance.now() - started };
  },

  setAuth: (owner, headers) => engine.setAuth(owner, headers),

  async requests(owner) {
    const out: BenchRequest[] = [];
    for await (const rows of rowsOf(owner)) {
      for (const row of rows) {
        if (row.request === undefined) continue;
        const { requestId, method, url, headers, body } = row.request;
        out.push({ requestId, method, url, headers, body });
      }
    }
    return out;
  },

  async seed(owner, count) {
    const db = await store();
    const [template] = (await db.scan(owner, { limit: 1 })) as StoredRow[];
    if (template?.request === undefined) throw new Error('seed needs one enqueued row to copy');
    let last = template;
    for await (const rows of rowsOf(owner, 10_000)) last = rows[rows.length - 1]!;
    const started = performance.now();
    for (let done = 0; done < count; done += SEED_TRANSACTION_ROWS) {
      const put: StoredRow[] = [];
      for (let i = done; i < Math.min(count, done + SEED_TRANSACTION_ROWS); i++) {
        const savedAt = last.savedAt + 1 + i;
        const id = `notes-${savedAt.toString(16).padStart(24, '0')}`;
        // Each its own create, in its own record, as an app's creates are (§6.1).
        put.push({
          ...template,
          id,
          targetId: `${PENDING_PREFIX}${id}`,
          savedAt,
          request: {
            ...template.request,
            requestId: id,
            headers: { ...template.request.headers, 'idempotency-key': `"${id}"` },
          },
        });
      }
      // Each takes a fresh `seq` in the transaction that writes it, as an enqueue gives one.
      const seq = put.map((row) => row.id);
      await db.replace({ owner, expected: [], put, seq, reason: 'bench-seed' });
    }
    return { ms: performance.now() - started, total: await countRows(owner) };
  },

  trace() {
    // The Chromium trace (when one records) reads the worker's clock off this mark.
    performance.mark(`bench-clock ${performance.timeOrigin + performance.now()}`);
    return tracer?.take() ?? [];
  },

  async storedRows(owner) {
    const raws: unknown[] = [];
    for await (const rows of rowsOf(owner, 10_000)) raws.push(...rows);
    return JSON.stringify(raws);
  },

  floorTemplates: async (rows) => floor.templates(JSON.parse(rows) as unknown[]),
  floorPrepare: (variant, rows) => floor.prepare(variant, rows),
  floorRun: () => floor.run(),

  async firstBatch(owner, reps) {
    const samples: FirstBatchSample[] = [];
    for (let rep = 0; rep < reps; rep++) {
      const claims: number[] = [];
      const started = performance.now();
      onClaimed = () => claims.push(performance.now() - started);
      const run = await engine.flush({ force: true, owners: [owner] });
      const flushMs = performance.now() - started;
      onClaimed = undefined;
      samples.push({
        firstClaimMs: claims[0] ?? Number.NaN,
        batchClaimMs: claims[CONCURRENCY - 1] ?? claims[claims.length - 1] ?? Number.NaN,
        flushMs,
        claimed: run.reports[0]?.claimed ?? 0,
      });
    }
    return samples;
  },
};
