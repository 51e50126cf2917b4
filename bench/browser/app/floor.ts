import { BUNDLE_VERSION } from '../../../shared/core/outbox-core.ts';
import { DEFAULT_TUNING } from '../../../shared/core/tuning.ts';
import type { Json } from '../../../shared/model/json.ts';
import { mayHaveOtherNames } from '../../../shared/model/pending.ts';
import { decodeRow, type OutboxRow } from '../../../shared/model/row.ts';
import type { Receipt, RecordName } from '../../../shared/model/store.ts';
import { DEFAULT_BATCH } from '../../../shared/plan/batch-groups.ts';
import { planClaim } from '../../../shared/plan/claim.ts';
import { receiptFor } from '../../../shared/plan/receipt.ts';
import { namesOf } from '../../../shared/plan/settle.ts';
import { done, request } from '../../../shared/store/idb-request.ts';
import { createMissingStores, INDEX, STORE } from '../../../shared/store/schema.ts';
import { restHandler } from '../../../shared/wire/rest-handler.ts';
import type { FloorVariant } from './floor-variants.ts';
import type { FloorPrepared, FloorRun } from './protocol.ts';

/**
 * The IndexedDB floor of the per-row contract, inside the bench worker: the IndexedDB requests a
 * batched drain must make per row (SPEC §2, §4, §5), and nothing else — no engine, no network,
 * no planning inside the timed window.
 *
 * Each measurement gets a fresh database created by the engine's own schema code
 * (`createMissingStores`, so the stores and indexes cannot drift from the engine's), filled with
 * copies of rows the engine itself enqueued. Everything the timed run writes is planned
 * beforehand with the engine's planners: each row's claim with `planClaim`, its receipt with
 * `receiptFor` and the `restHandler` the bench worker configures, from the reference server's
 * answer to a create (`{ id, revision, title, body }`). The run then goes batch by batch,
 * `DEFAULT_BATCH.maxRows` rows each, one transaction after another, with the engine's shapes
 * and durability: a claim transaction over `rows`, a settle transaction over `rows` and
 * `receipts` whose reads are issued together and awaited before its writes (as
 * `shared/store/idb-apply.ts` does), both with `default` durability.
 */

const DB_PREFIX = 'sw-outbox-floor-';
const ROWS_PER_BATCH = DEFAULT_BATCH.maxRows;
/** What the engine's `scan` asks for: a full batch's worth (`shared/core/dispatcher.ts`). */
const SCAN_LIMIT = Math.max(DEFAULT_TUNING.batchSize, DEFAULT_BATCH.maxRows);
const handler = restHandler({ baseUrl: '/api/notes' });
const NOTE_ID_HEX = 12;

type QueueKey = [string, number, string];

/** One batch's writes, planned before the timed run. */
interface PlannedBatch {
  owner: string;
  ids: string[];
  /** Each row as its claim writes it (`planClaim`). */
  claimed: OutboxRow[];
  receipts: Receipt[];
  /** The name each create's ACK writes (§6.1), from its receipt's server id. */
  names: RecordName[];
  /** The record (`by_owner_target`) key of each row. */
  records: [string, string, string][];
  /** The first and last queue-index key of the batch: the compares' range. */
  first: QueueKey;
  last: QueueKey;
}

interface Prepared {
  variant: FloorVariant;
  db: IDBDatabase;
  name: string;
  batches: PlannedBatch[];
}

/** Counts what a run issued: transactions and requests. */
interface Tally {
  transactions: number;
  requests: number;
}

/** The floor's worker side: templates in memory, one prepared database at a time. */
export function createFloorBench(holderId: string) {
  let templates: unknown[] = [];
  let prepared: Prepared | undefined;
  let sequence = 0;

  async function dispose(): Promise<void> {
    if (prepared === undefined) return;
    const { db, name } = prepared;
    prepared = undefined;
    db.close();
    await request(indexedDB.deleteDatabase(name));
  }

  return {
    /** Keeps the rows an owner has stored (raw, as the engine wrote them) as the templates. */
    templates(rows: unknown[]): { rows: number } {
      templates = rows;
      return { rows: rows.length };
    },

    /**
     * A fresh database with the first `count` templates in it (one transaction, outside any
     * timed window), and the writes of `variant` planned.
     */
    async prepare(variant: FloorVariant, count: number): Promise<FloorPrepared> {
      await dispose();
      if (templates.length < count)
        throw new Error(`${templates.length} templates, ${count} wanted`);
      const raws = templates.slice(0, count);
      const name = `${DB_PREFIX}${++sequence}`;
      const db = await openFresh(name);
      const fill = db.transaction(STORE.rows, 'readwrite', { durability: 'default' });
      for (const raw of raws) fill.objectStore(STORE.rows).put(raw);
      await done(fill);
      const now = Date.now();
      const batches: PlannedBatch[] = [];
      for (let start = 0; start < raws.length; start += ROWS_PER_BATCH)
        batches.push(planBatch(raws.slice(start, start + ROWS_PER_BATCH), holderId, now));
      prepared = { variant, db, name, batches };
      const first = batches[0]!;
      return {
        rows: count,
        bytes: {
          row: jsonBytes(raws[0]),
          claimed: jsonBytes(first.claimed[0]),
          receipt: jsonBytes(first.receipts[0]),
        },
      };
    },

    /** Runs the prepared variant: only IndexedDB requests between the two clock readings. */
    async run(): Promise<FloorRun> {
      if (prepared === undefined) throw new Error('prepare first');
      const { variant, db, batches } = prepared;
      const tally: Tally = { transactions: 0, requests: 0 };
      const started = performance.now();
      for (const batch of batches) await VARIANTS[variant](db, batch, tally);
      const ms = performance.now() - started;
      return { ms, ...tally };
    },

    dispose,
  };
}

type BatchWork = (db: IDBDatabase, batch: PlannedBatch, tally: Tally) => Promise<void>;

/** What each variant does per batch of rows. */
const VARIANTS: Record<FloorVariant, BatchWork> = {
  contract: async (db, batch, tally) => {
    await claim(db, batch, tally, false);
    await settle(db, batch, tally, { check: true, compare: false });
  },
  'contract-with-names': async (db, batch, tally) => {
    await claim(db, batch, tally, false);
    await lastLook(db, batch, tally);
    await settle(db, batch, tally, { check: true, compare: false, names: true });
  },
  'contract-no-record-check': async (db, batch, tally) => {
    await claim(db, batch, tally, false);
    await settle(db, batch, tally, { check: false, compare: false });
  },
  'claim-only': (db, batch, tally) => claim(db, batch, tally, false),
  'settle-only': (db, batch, tally) => settle(db, batch, tally, { check: false, compare: false }),
  'delete-only': async (db, batch, tally) => {
    const { tx, rows } = begin(db, [STORE.rows], tally);
    for (const id of batch.ids) rows.delete(id);
    tally.requests += batch.ids.length;
    await done(tx);
  },
  'engine-transactions': async (db, batch, tally) => {
    // The engine's scan: a readonly read of the next batch's worth of rows in queue order.
    const { tx } = begin(db, [STORE.rows], tally, 'readonly');
    const index = tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerSavedAt);
    tally.requests++;
    await request(index.getAll(IDBKeyRange.bound(batch.first, [batch.owner, []]), SCAN_LIMIT));
    await claim(db, batch, tally, true);
    await settle(db, batch, tally, { check: true, compare: true });
  },
  'batch-level': async (db, batch, tally) => {
    // One claim record for the batch (`meta`, out-of-line keys), one receipt record holding
    // every item's answer, and each row only deleted. Not what SPEC §4/§5 let the engine do:
    // there each row carries its own claim and fence, and each request its own receipt.
    const [id] = batch.ids as [string];
    const claimed = begin(db, [STORE.meta], tally);
    const { claim } = batch.claimed[0]!;
    claimed.tx.objectStore(STORE.meta).put({ ...claim, ids: batch.ids }, `floor-claim:${id}`);
    tally.requests++;
    await done(claimed.tx);
    const { tx, rows } = begin(db, [STORE.rows, STORE.receipts], tally);
    for (const rowId of batch.ids) rows.delete(rowId);
    const [first] = batch.receipts as [Receipt];
    tx.objectStore(STORE.receipts).put({
      ...first,
      requestId: `batch:${first.requestId}`,
      kind: 'batch',
      body: batch.receipts as unknown as Json,
    });
    tally.requests += batch.ids.length + 1;
    await done(tx);
  },
};

/** The claim transaction: each row put with its claim; with `compare`, the range read first. */
async function claim(
  db: IDBDatabase,
  batch: PlannedBatch,
  tally: Tally,
  compare: boolean,
): Promise<void> {
  const { tx, rows } = begin(db, [STORE.rows], tally);
  if (compare) await compareRange(rows, batch, tally);
  for (const row of batch.claimed) rows.put(row);
  tally.requests += batch.claimed.length;
  await done(tx);
}

/**
 * The last look before the wire (SPEC §6.1): each row's record under both its names, in one
 * readonly transaction — the `pending:<C>` entries naming it (`names` by server id; only a server
 * id has them, so none for a `pending:` target) and its rows' keys (whether another row is there
 * to be in flight; each bench record holds only the row about to leave, so no value is read) —
 * every request issued at once.
 */
async function lastLook(db: IDBDatabase, batch: PlannedBatch, tally: Tally): Promise<void> {
  const { tx } = begin(db, [STORE.names, STORE.rows], tally, 'readonly');
  const names = tx.objectStore(STORE.names).index(INDEX.namesByServerId);
  const records = tx.objectStore(STORE.rows).index(INDEX.rowsByOwnerTarget);
  const pending: IDBRequest[] = [];
  for (const key of batch.records) {
    if (mayHaveOtherNames(key[2])) pending.push(names.getAll(key, 16));
    pending.push(records.getAllKeys(key));
  }
  tally.requests += pending.length;
  await request(pending[pending.length - 1]!);
}

/**
 * The settle transaction over `rows` and `receipts`: with `check`, each row's record keys
 * (`getAllKeys` on `by_owner_target`), with `compare` the range of the rows as claimed, with
 * `names` the names of each record read (`names` by server id, for server ids) and each create's name written
 * (§6.1), all reads issued together and awaited; then each row deleted and its receipt put.
 */
async function settle(
  db: IDBDatabase,
  batch: PlannedBatch,
  tally: Tally,
  reads: { check: boolean; compare: boolean; names?: boolean },
): Promise<void> {
  const stores = reads.names
    ? [STORE.rows, STORE.receipts, STORE.names]
    : [STORE.rows, STORE.receipts];
  const { tx, rows } = begin(db, stores, tally);
  const pending: IDBRequest[] = [];
  if (reads.check) {
    const index = rows.index(INDEX.rowsByOwnerTarget);
    for (const key of batch.records) pending.push(index.getAllKeys(key));
  }
  if (reads.names) {
    const index = tx.objectStore(STORE.names).index(INDEX.namesByServerId);
    for (const key of batch.records) if (mayHaveOtherNames(key[2])) pending.push(index.getAll(key));
  }
  if (reads.compare) pending.push(rangeRead(rows, batch));
  tally.requests += pending.length;
  if (pending.length > 0) await request(pending[pending.length - 1]!);
  const receipts = tx.objectStore(STORE.receipts);
  for (const id of batch.ids) rows.delete(id);
  for (const receipt of batch.receipts) receipts.put(receipt);
  tally.requests += batch.ids.length + batch.receipts.length;
  if (reads.names) {
    for (const name of batch.names) tx.objectStore(STORE.names).put(name);
    tally.requests += batch.names.length;
  }
  await done(tx);
}

/** The compares' read (`idb-apply.ts`): the batch's rows as one range of the queue index. */
function rangeRead(rows: IDBObjectStore, batch: PlannedBatch): IDBRequest<unknown[]> {
  const limit = 2 * batch.ids.length + 8;
  return rows
    .index(INDEX.rowsByOwnerSavedAt)
    .getAll(IDBKeyRange.bound(batch.first, batch.last), limit);
}

async function compareRange(rows: IDBObjectStore, batch: PlannedBatch, tally: Tally) {
  tally.requests++;
  await request(rangeRead(rows, batch));
}

function begin(
  db: IDBDatabase,
  stores: string[],
  tally: Tally,
  mode: IDBTransactionMode = 'readwrite',
): { tx: IDBTransaction; rows: IDBObjectStore } {
  tally.transactions++;
  const tx = db.transaction(stores, mode, { durability: 'default' });
  return { tx, rows: tx.objectStore(stores[0]!) };
}

/** Claims and receipts for a batch of stored rows, planned as the engine plans them. */
function planBatch(raws: unknown[], holderId: string, now: number): PlannedBatch {
  const claimed: OutboxRow[] = [];
  const receipts: Receipt[] = [];
  const names: RecordName[] = [];
  for (const [i, raw] of raws.entries()) {
    const decoded = decodeRow(raw);
    if (!decoded.ok) throw new Error(`template ${decoded.id} does not decode: ${decoded.issues}`);
    const ctx = {
      owner: decoded.row.owner,
      holderId,
      now,
      leaseMs: DEFAULT_TUNING.leaseMs,
      bundle: BUNDLE_VERSION,
    };
    const plan = planClaim(decoded.row, raw, ctx);
    if (plan.kind !== 'claim') throw new Error(`template ${decoded.row.id}: ${plan.reason}`);
    claimed.push(plan.row);
    const receipt = receiptFor(handler, plan.row, 201, serverAnswer(plan.row, now, i), now);
    receipts.push(receipt);
    names.push(...(namesOf(plan.row, receipt).names ?? []));
  }
  const keyOf = (row: OutboxRow): QueueKey => [row.owner, row.savedAt, row.id];
  return {
    owner: claimed[0]!.owner,
    ids: claimed.map((row) => row.id),
    claimed,
    receipts,
    names,
    records: claimed.map((row) => [row.owner, row.collection, row.targetId]),
    first: keyOf(claimed[0]!),
    last: keyOf(claimed[claimed.length - 1]!),
  };
}

/** The reference server's answer to a create: the note as stored (`server/store/port.ts`). */
function serverAnswer(row: OutboxRow, now: number, i: number): Json {
  const sent = JSON.parse(row.request?.body ?? '{}') as { title?: string; body?: string };
  // The server's id shape (`newNoteId`): 12 hex digits of the time, 12 of a random UUID.
  const id = `note-${now.toString(16).padStart(NOTE_ID_HEX, '0').slice(-NOTE_ID_HEX)}${String(i).padStart(NOTE_ID_HEX, '0')}`;
  return { id, revision: 1, title: sent.title ?? '', body: sent.body ?? '' };
}

function openFresh(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(name, 1);
    open.onupgradeneeded = () => {
      if (open.transaction) createMissingStores(open.result, open.transaction);
    };
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

const jsonBytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
