import type { Json } from '../../shared/model/json.ts';
import type { IdSource } from '../../shared/model/ports.ts';
import type {
  ChangeNotice,
  ConflictLedgerEntry,
  OutboxStore,
  Receipt,
  RecordLook,
  RecordName,
  ReplacePlan,
  ReplaceResult,
  RowCursor,
  Tombstone,
} from '../../shared/model/store.ts';
import type { Committer, Truth } from './oracles.ts';
import type { Prng } from './prng.ts';
import type { Scheduler } from './scheduler.ts';
import type { Fault } from './swarm-config.ts';

/**
 * The store port as the simulation hands it to one holder serving one owner (SPEC §20): every
 * call is a step the scheduler picks, may fail (before its transaction, or after it committed),
 * and is watched for G6 — a holder reads, claims and deletes only its owner's rows.
 */

export interface StoreFaults {
  faults: ReadonlySet<Fault>;
  live(): boolean;
  count(fault: string): void;
}

function owned(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const owner = (value as { owner?: unknown }).owner;
  return typeof owner === 'string' ? owner : undefined;
}

/** A key as the trace shows it: a Date to the millisecond, binary in hex, arrays of those. */
function short(id: unknown): string {
  if (id instanceof Date) return id.toISOString();
  if (id instanceof ArrayBuffer || ArrayBuffer.isView(id)) {
    const view =
      id instanceof ArrayBuffer
        ? new Uint8Array(id)
        : new Uint8Array(id.buffer, id.byteOffset, id.byteLength);
    return `0x${[...view].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
  }
  if (Array.isArray(id)) return `[${id.map(short).join(',')}]`;
  return String(id);
}

function planLabel(plan: ReplacePlan): string {
  const put = (plan.put ?? []).map((row) => short((row as { id?: unknown }).id));
  const del = (plan.delete ?? []).map(short);
  return `${plan.reason}${put.length ? ` put ${put.join(',')}` : ''}${del.length ? ` del ${del.join(',')}` : ''}`;
}

export class SimStore implements OutboxStore {
  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    private readonly truth: Truth,
    private readonly real: OutboxStore,
    private readonly by: Omit<Committer, 'now'>,
    private readonly clock: () => number,
    private readonly faults: StoreFaults,
  ) {}

  #fault(write: boolean): 'fail' | 'lost-ack' | 'quota' | undefined {
    if (!this.faults.live()) return undefined;
    const on = (fault: Fault, p: number) => {
      if (!this.faults.faults.has(fault) || !this.rng.chance(p)) return false;
      this.faults.count(fault);
      return true;
    };
    if (on('storage-fail', write ? 0.05 : 0.03)) return 'fail';
    if (write && on('quota', 0.03)) return 'quota';
    if (write && on('storage-lost-ack', 0.05)) return 'lost-ack';
    return undefined;
  }

  #call<T>(
    what: string,
    write: boolean,
    exec: () => Promise<T>,
    observe?: (result: T) => string | undefined,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.sched.add(this.by.holder, `${this.by.holder}/${this.by.owner} ${what}`, async () => {
        const fault = this.#fault(write);
        if (fault === 'fail' || fault === 'quota') {
          reject(
            new DOMException(
              fault === 'quota' ? 'quota exceeded' : 'the transaction failed',
              fault === 'quota' ? 'QuotaExceededError' : 'UnknownError',
            ),
          );
          return ` ✗ ${fault}`;
        }
        let result: T;
        try {
          result = await exec();
        } catch (error) {
          reject(error);
          return ` ✗ ${error instanceof Error ? error.name : 'error'}`;
        }
        const note = observe?.(result) ?? '';
        if (fault === 'lost-ack') {
          reject(new DOMException('the connection was lost', 'UnknownError'));
          return `${note} ✗ (committed, caller told it failed)`;
        }
        resolve(result);
        return note;
      });
    });
  }

  #read<T>(what: string, exec: () => Promise<T>, check: (result: T) => void): Promise<T> {
    return this.#call(what, false, exec, (result) => {
      this.truth.exercise('G6');
      check(result);
      return undefined;
    });
  }

  #mine(value: unknown, what: string): void {
    const owner = owned(value);
    if (owner !== undefined && owner !== this.by.owner)
      this.truth.fail(
        'G6',
        'read-other-owner',
        `${this.by.holder} for ${this.by.owner} read ${what} of ${owner}`,
      );
  }

  #index(owner: string, what: string): void {
    this.truth.exercise('G6');
    if (owner !== this.by.owner)
      this.truth.fail(
        'G6',
        'read-other-owner',
        `${this.by.holder} for ${this.by.owner} asked for ${what} of ${owner}`,
      );
  }

  get(id: string, owner?: string): Promise<unknown> {
    if (owner !== undefined) this.#index(owner, `row ${id}`);
    return this.#read(
      `get ${id}`,
      () => this.real.get(id, owner),
      (v) => this.#mine(v, `row ${id}`),
    );
  }

  getMany(ids: readonly string[], owner?: string): Promise<unknown[]> {
    if (owner !== undefined) this.#index(owner, 'rows');
    return this.#read(
      `getMany ${ids.length}`,
      () => this.real.getMany(ids, owner),
      (values) => {
        for (const v of values) this.#mine(v, 'a row');
      },
    );
  }

  scan(owner: string, opts: { after?: RowCursor; limit: number }): Promise<unknown[]> {
    this.#index(owner, 'the rows');
    if (opts.after !== undefined) this.truth.reach('scan-in-pages');
    return this.#read(
      `scan${opts.after ? ` after ${opts.after.id}` : ''}`,
      () => this.real.scan(owner, opts),
      (rows) => {
        for (const v of rows) this.#mine(v, 'a row');
      },
    );
  }

  holdingRows(owner: string): Promise<unknown[]> {
    this.#index(owner, 'the holding rows');
    return this.#read(
      'holdingRows',
      () => this.real.holdingRows(owner),
      (rows) => {
        for (const v of rows) this.#mine(v, 'a row');
      },
    );
  }

  byTarget(owner: string, collection: string, targetId: string): Promise<unknown[]> {
    this.#index(owner, `record ${targetId}`);
    return this.#read(
      `byTarget ${targetId}`,
      () => this.real.byTarget(owner, collection, targetId),
      (rows) => {
        for (const v of rows) this.#mine(v, 'a row');
      },
    );
  }

  byTargets(owner: string, records: readonly RecordLook[]): Promise<unknown[][]> {
    this.#index(owner, `records ${records.map((r) => r.targetId).join(',')}`);
    return this.#read(
      `byTargets ${records.map((r) => r.targetId).join(',')}`,
      () => this.real.byTargets(owner, records),
      (lists) => {
        for (const v of lists.flat()) this.#mine(v, 'a row');
      },
    );
  }

  replace(plan: ReplacePlan): Promise<ReplaceResult> {
    return this.#call(
      `replace ${planLabel(plan)}`,
      true,
      () => this.real.replace(plan),
      (result) => {
        if (result === 'committed') this.truth.commit({ ...this.by, now: this.clock() }, plan);
        return ` → ${result}`;
      },
    );
  }

  replaceEach(plans: ReplacePlan[]): Promise<ReplaceResult[]> {
    return this.#call(
      `replaceEach [${plans.map(planLabel).join(' | ')}]`,
      true,
      () => this.real.replaceEach(plans),
      (results) => {
        results.forEach((result, i) => {
          if (result === 'committed')
            this.truth.commit({ ...this.by, now: this.clock() }, plans[i]!);
        });
        return ` → ${results.join(',')}`;
      },
    );
  }

  getReceipt(requestId: string, owner?: string): Promise<Receipt | undefined> {
    if (owner !== undefined) this.#index(owner, `receipt ${requestId}`);
    return this.#read(
      `getReceipt ${requestId}`,
      () => this.real.getReceipt(requestId, owner),
      (r) => this.#mine(r, `receipt ${requestId}`),
    );
  }

  listReceipts(owner: string, limit: number): Promise<Receipt[]> {
    this.#index(owner, 'receipts');
    return this.#read(
      'listReceipts',
      () => this.real.listReceipts(owner, limit),
      () => {},
    );
  }

  listConflicts(owner: string, limit: number): Promise<ConflictLedgerEntry[]> {
    this.#index(owner, 'the conflict ledger');
    return this.#read(
      'listConflicts',
      () => this.real.listConflicts(owner, limit),
      () => {},
    );
  }

  getTombstone(id: string, owner?: string): Promise<Tombstone | undefined> {
    if (owner !== undefined) this.#index(owner, `tombstone ${id}`);
    return this.#read(
      `getTombstone ${id}`,
      () => this.real.getTombstone(id, owner),
      (t) => this.#mine(t, `tombstone ${id}`),
    );
  }

  getName(owner: string, pendingId: string): Promise<RecordName | undefined> {
    this.#index(owner, `name ${pendingId}`);
    return this.#read(
      `getName ${pendingId}`,
      () => this.real.getName(owner, pendingId),
      (n) => this.#mine(n, `name ${pendingId}`),
    );
  }

  prune(owner: string, limits: Parameters<OutboxStore['prune']>[1]): Promise<void> {
    this.#index(owner, 'pruning');
    // What the prune left is read back at once, so the oracles know which receipts are gone.
    return this.#call(
      'prune',
      true,
      async () => {
        await this.real.prune(owner, limits);
        return (await this.real.listReceipts(owner, 100_000)).map((r) => r.requestId);
      },
      (kept) => {
        const pruned = this.truth.receiptsKept(owner, kept);
        return pruned > 0 ? ` (${pruned} receipts pruned)` : '';
      },
    ).then(() => undefined);
  }

  getMeta(key: string): Promise<Json | undefined> {
    return this.#call(`getMeta ${key}`, false, () => this.real.getMeta(key));
  }

  setMeta(key: string, value: Json | undefined): Promise<void> {
    return this.#call(`setMeta ${key}`, true, () => this.real.setMeta(key, value));
  }

  updateMeta(
    key: string,
    update: (current: Json | undefined) => Json | undefined,
  ): Promise<Json | undefined> {
    return this.#call(`updateMeta ${key}`, true, () => this.real.updateMeta(key, update));
  }

  onChange(listener: (notice: ChangeNotice) => void): () => void {
    return this.real.onChange(listener);
  }

  close(): void {
    // The holder's connection is shared by its owners: the holder closes it.
  }
}

/** Deterministic ids for one holder: a tag and a counter, jitter from the run's generator. */
export function simIds(tag: number, rng: Prng): IdSource {
  let n = 0;
  const prefix = tag.toString(16).padStart(6, '0');
  return {
    hex24: () => `${prefix}${(++n).toString(16).padStart(18, '0')}`,
    random: () => rng.next(),
  };
}
