import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import type { OutboxCore, OwnerApi } from '../../shared/core/outbox-api.ts';
import { createOutboxCore } from '../../shared/core/outbox-core.ts';
import { DEFAULT_TUNING } from '../../shared/core/tuning.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

import { OutboxError } from '../../shared/model/errors.ts';
import type { CollectionHandler, IntentInfo } from '../../shared/model/handler.ts';
import type { Json } from '../../shared/model/json.ts';
import type { OutboxRow } from '../../shared/model/row.ts';
import type { ConflictLedgerEntry, OutboxStore, ReplacePlan } from '../../shared/model/store.ts';
import { buildRowRequest } from '../../shared/plan/identity.ts';
import { createFetchTransport } from '../../shared/runtime/fetch-transport.ts';
import { openIdbStore } from '../../shared/store/idb.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { BATCH_PATH } from '../../shared/wire/batch.ts';
import { requestsHandler } from '../../shared/wire/requests-handler.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { ModelServer } from '../support/model-server.ts';
import { describeKey, type KeyKind } from './keys.ts';
import { Network, ORIGIN } from './network.ts';
import { type EditDraft, Truth } from './oracles.ts';
import { PageRoute, routeRecords } from './page-route.ts';
import { SimStore, simIds } from './ports.ts';
import { Prng } from './prng.ts';
import { Scheduler } from './scheduler.ts';
import {
  type Fault,
  type Fields,
  type Op,
  SIM_RETENTION_MS,
  type SimConfig,
} from './swarm-config.ts';

/**
 * The simulated world of one run (SPEC §20): the model server, 1–3 holders on one store (each
 * with its own clock, ids, fetch transport, auth hook and handlers), a legacy v0 writer, the
 * app that edits records of one or two owners, a corruptor, and another device. Every port is
 * driven by the run's one scheduler.
 */

export const OWNERS = ['alice', 'bob'] as const;
export const T0 = 1_700_000_000_000;
/** The clock skew band: below the lease's safety margin (SPEC §4), as NTP keeps devices. */
const MAX_SKEW_MS = 900;

/** Codes an API call may fail with by contract; anything else is an unclear error (G7). */
const ALLOWED: Record<string, readonly string[]> = {
  enqueue: ['target_deleted', 'storage', 'quota_exceeded'],
  retry: ['not_blocked', 'not_found', 'storage', 'quota_exceeded'],
  discard: ['not_blocked', 'not_found', 'storage', 'quota_exceeded'],
  resumeHeld: ['storage', 'quota_exceeded'],
  restore: [
    'history_unavailable',
    'not_found',
    'network',
    'timeout',
    'auth_required',
    'storage',
    'quota_exceeded',
    'target_deleted',
  ],
  rows: ['storage'],
  stats: ['storage'],
  flush: [],
};

/** The key types a numeric draw of the corruptor takes in turn (a string key is the other draw). */
const NUMERIC_KEYS = ['number', 'date', 'array', 'binary'] as const satisfies readonly KeyKind[];

/** The key of the corruptor's `n`th value, of one kind. */
function corruptKey(kind: KeyKind, n: number): string | number | Date | unknown[] | Uint8Array {
  switch (kind) {
    case 'number':
      return 900_000 + n;
    case 'date':
      return new Date(T0 + n);
    case 'array':
      return ['corrupt', n];
    case 'binary':
      return new Uint8Array([0xc0, n & 0xff, (n >> 8) & 0xff]);
    default:
      return `corrupt-${String(n).padStart(4, '0')}`;
  }
}

/** Steps an API call may take before it counts as hung (G7). */
const CALL_BOUND_STEPS: Record<string, number> = { flush: 6_000 };
const DEFAULT_CALL_BOUND = 2_000;

interface Slot {
  targetId: string;
  createId?: string;
}

interface Call {
  no: number;
  holder: Holder;
  what: string;
  startStep: number;
  reissue?: () => void;
}

export class Holder {
  readonly cores = new Map<string, OutboxCore>();
  readonly handlers: Record<string, CollectionHandler>;
  offset: number;
  readonly fetch: typeof fetch;
  readonly transport: ReturnType<typeof createFetchTransport>;
  readonly ids;
  /** The page's requests through this worker's Workbox route (SPEC §22). */
  readonly directFetch: typeof fetch;
  #route: PageRoute | undefined;

  constructor(
    private readonly world: World,
    readonly slot: number,
    readonly name: string,
    readonly real: OutboxStore,
    tag: number,
  ) {
    this.offset = world.on('clock-skew') ? world.rng.int(-MAX_SKEW_MS, MAX_SKEW_MS) : 0;
    if (this.offset !== 0) world.count('fault:clock-skew');
    this.ids = simIds(tag, world.rng);
    this.handlers = world.handlers();
    this.fetch = world.net.fetchFor(name, () => this.now());
    this.directFetch = world.net.fetchFor(name, () => this.now(), false, true);
    this.transport = createFetchTransport({
      auth: (owner) => world.auth(this, owner),
      allowedOrigins: [ORIGIN],
      baseUrl: `${ORIGIN}/`,
      timeoutMs: world.config.leaseMs,
      fetch: this.fetch,
      clock: { now: () => this.now() },
    });
  }

  now(): number {
    return this.world.sched.now + this.offset;
  }

  /** The Workbox route of this worker, made when the page first sends through it. */
  get route(): PageRoute {
    this.#route ??= new PageRoute(this, this.world.truth);
    return this.#route;
  }

  /** The worker died: its route's pages see a network error. */
  killed(): void {
    this.#route?.killed();
  }

  api(owner: string): OwnerApi {
    let core = this.cores.get(owner);
    if (core === undefined) {
      const { world } = this;
      const store = new SimStore(
        world.sched,
        world.rng,
        world.truth,
        this.real,
        { holder: this.name, owner, kind: 'core' },
        () => this.now(),
        world.storeFaults,
      );
      core = createOutboxCore({
        store,
        transport: this.transport,
        clock: { now: () => this.now() },
        ids: this.ids,
        handlers: this.handlers,
        holderId: this.name,
        bundle: 'sw-outbox@sim',
        leaseMs: world.config.leaseMs,
        concurrency: world.config.concurrency,
        batchSize: world.config.batchSize,
        batch: { maxRows: world.config.scanRows },
        maxConflictSuccessors: world.config.maxConflictSuccessors,
        receipts: { ...DEFAULT_TUNING.receipts, maxCount: world.config.maxReceipts },
        onEvent: (event) => world.event(this, event),
      });
      this.cores.set(owner, core);
    }
    return core.forOwner(owner);
  }
}

export class World {
  readonly sched = new Scheduler(T0);
  readonly rng: Prng;
  readonly truth: Truth;
  readonly server = new ModelServer();
  readonly net: Network;
  readonly faults: ReadonlySet<Fault>;
  readonly actors: ReadonlySet<string>;
  readonly holders: Array<Holder | undefined> = [];
  readonly owners: string[];
  readonly slots = new Map<string, Slot[]>();
  readonly calls = new Map<number, Call>();
  readonly coverage = new Map<string, number>();
  readonly storeFaults;
  /** Faults strike only while live; the drain switches them off. */
  live = true;
  steps = 0;
  unauthorized = false;
  readonly authNone = new Set<string>();
  /** Owners signed out (SPEC §13): the app has no credentials for them until they sign in. */
  readonly signedOut = new Set<string>();
  #callNo = 0;
  #editNo = 0;
  #incarnation = 0;
  #corruptNo = 0;
  #numericNo = 0;
  #otherNo = 0;
  readonly #open: () => Promise<OutboxStore>;
  readonly legacy: LegacyWriter;
  readonly #busy: Prng;
  /** The page's own draws for its Workbox route: other seeds run as before. */
  readonly #page: Prng;
  #pageNo = 0;
  /** The typing user's own draws, and the record each owner's app edited last. */
  readonly #typing: Prng;
  readonly #lastEdited = new Map<string, Slot>();
  #routeWorker: Holder | undefined;

  constructor(readonly config: SimConfig) {
    this.rng = new Prng(config.seed, 3);
    this.#busy = new Prng(config.seed, 6);
    this.#page = new Prng(config.seed, 7);
    this.#typing = new Prng(config.seed, 8);
    this.faults = new Set(config.faults);
    this.actors = new Set(config.actors);
    this.owners = OWNERS.slice(0, config.owners);
    this.truth = new Truth(config.leaseMs, (entry) => this.restoredValue(entry));
    // An empty title is what the server refuses, as the demo's server does.
    this.server.reject = (request) => {
      if (request.method === 'DELETE' || request.body === null) return undefined;
      const body = JSON.parse(request.body) as Record<string, Json>;
      return body.title === ''
        ? { status: 422, body: { type: 'validation-failed', detail: 'title must not be empty' } }
        : undefined;
    };
    if (config.batches) this.server.batchPath = BATCH_PATH;
    // The records a page edits through its Workbox route, already on the server (§22).
    if (this.actors.has('workbox-route'))
      for (const owner of this.owners)
        for (const id of routeRecords(owner))
          this.server.records.set(id, {
            id,
            owner,
            revision: 1,
            data: { title: 'w' },
            deleted: false,
          });
    // Another device that keeps editing a record: it gets there just before a request does.
    this.server.beforeApply = (request) => {
      if (request.method === 'POST' || !this.strikes('other-device', config.hot)) return;
      const id = decodeURIComponent(request.url.split('/')[3] ?? '');
      const record = this.server.records.get(id);
      if (record && !record.deleted)
        this.server.editElsewhere(id, { other: `d${++this.#otherNo}` });
    };
    const count = (fault: string) => this.count(`fault:${fault}`);
    this.net = new Network(this.sched, this.rng, this.server, this.truth, {
      faults: this.faults,
      batches: config.batches,
      leaseMs: config.leaseMs,
      live: () => this.live,
      unauthorized: () => this.unauthorized,
      count,
    });
    this.storeFaults = { faults: this.faults, live: () => this.live, count };
    const name = `sim-${config.seed}-${Math.floor(this.rng.next() * 1e9)}`;
    if (config.store === 'memory') {
      this.#open = async () => createMemoryStore({ name });
    } else {
      const factory = new IDBFactory();
      this.#open = () => openIdbStore({ name, indexedDB: factory, broadcast: false });
    }
    this.legacy = new LegacyWriter(this);
  }

  /** Until when the app's script waits (a tick): time passes, timers fire in their order. */
  waitUntil = 0;

  /** Lets `ms` pass: a step due then, so time moves there through every timer due before. */
  wait(ms: number): void {
    this.waitUntil = Math.max(this.waitUntil, this.sched.now + ms);
    this.sched.add('clock', `${ms} ms have passed`, () => undefined, ms);
  }

  on(fault: Fault): boolean {
    return this.faults.has(fault);
  }

  /** Whether a fault strikes here (and counts it). */
  strikes(fault: Fault, p: number): boolean {
    if (!this.live || !this.faults.has(fault) || !this.rng.chance(p)) return false;
    this.count(`fault:${fault}`);
    return true;
  }

  count(what: string): void {
    this.coverage.set(what, (this.coverage.get(what) ?? 0) + 1);
  }

  openStore(): Promise<OutboxStore> {
    return this.#open();
  }

  /** The collection handler every holder runs, with the app's faults woven in. */
  handlers(): Record<string, CollectionHandler> {
    const base = restHandler({
      baseUrl: '/api/notes',
      ...(this.config.conflict === 'block' ? { conflict: 'block' as const } : {}),
    });
    const maybeThrow = (what: string) => {
      if (this.strikes('handler-throws', 0.08)) throw new Error(`${what} threw (simulated)`);
    };
    return {
      requests: requestsHandler(),
      notes: {
        ...base,
        // The simulated server takes edits without If-Match, and the swarm makes some (§10).
        requiresRevision: false,
        readReceipt: (body, status) => {
          maybeThrow('readReceipt');
          return base.readReceipt!(body, status);
        },
        readConflict: () => {
          maybeThrow('readConflict');
          return undefined;
        },
        prepareSuccessor: () => {
          maybeThrow('prepareSuccessor');
          return undefined as unknown as IntentInfo;
        },
        classify: (_result, fallback) => {
          maybeThrow('classify');
          return fallback;
        },
      },
    };
  }

  /** The app's `auth(owner)` hook of one holder: a step, maybe slow, maybe failing. */
  auth(holder: Holder, owner: string): Promise<Record<string, string> | null> {
    const slow = this.strikes('auth-slow', 0.25) ? this.rng.int(1, this.config.leaseMs) : 0;
    return new Promise((resolve, reject) => {
      this.sched.add(
        holder.name,
        `${holder.name} auth(${owner})`,
        () => {
          if (this.strikes('auth-fail', 0.12)) {
            reject(new Error('the token endpoint is down (simulated)'));
            return ' ✗ fails';
          }
          if (this.signedOut.has(owner)) {
            resolve(null);
            return ' → signed out';
          }
          if (this.live && this.authNone.has(owner)) {
            this.count('fault:auth-none');
            resolve(null);
            return ' → no credentials';
          }
          resolve({ authorization: `Bearer ${owner}` });
          return '';
        },
        slow,
      );
    });
  }

  /** What `restore` writes back: the version the server keeps for the entry's reference. */
  restoredValue(entry: ConflictLedgerEntry): Json | undefined {
    const ref = entry.historyRef;
    if (!ref) return undefined;
    const found = this.server.version(entry.owner, ref.recordId, ref.supersededRevision);
    return found.kind === 'found' ? found.version.value : undefined;
  }

  event(_holder: Holder, event: { type: string }): void {
    this.count(`event:${event.type}`);
  }

  /** Seeds two records per owner on the server, known to the app. */
  seedRecords(): void {
    for (const owner of this.owners) {
      const slots: Slot[] = [];
      for (let i = 0; i < 2; i++) {
        const record = this.server.seed(owner, { title: `seed${i}`, body: 'seed', tag: 'seed' });
        slots.push({ targetId: record.id });
      }
      this.slots.set(owner, slots);
    }
  }

  async startHolder(slot: number): Promise<Holder> {
    const letter = String.fromCharCode(65 + slot);
    const n = ++this.#incarnation;
    const name = n <= this.config.holders ? letter : `${letter}${n}`;
    const holder = new Holder(this, slot, name, await this.openStore(), n);
    this.holders[slot] = holder;
    return holder;
  }

  kill(slot: number): string {
    const holder = this.holders[slot];
    if (holder === undefined) return 'nothing to kill';
    this.count('fault:kill');
    this.sched.kill(holder.name);
    this.net.kill(holder.name);
    holder.killed();
    holder.real.close();
    this.holders[slot] = undefined;
    for (const call of [...this.calls.values()]) {
      if (call.holder !== holder) continue;
      this.calls.delete(call.no);
      // The page's connection notices the dead worker and retries the call once (§13).
      if (call.reissue && this.rng.chance(0.7)) call.reissue();
    }
    return `killed ${holder.name}`;
  }

  liveHolders(): Holder[] {
    return this.holders.filter((h): h is Holder => h !== undefined);
  }

  /** Runs one API call of the app as a tracked call (G7: it answers in its bound, with a clear error). */
  call<T>(
    holder: Holder,
    what: keyof typeof ALLOWED,
    run: () => Promise<T>,
    after?: (value: T) => void,
    reissue?: () => void,
  ): void {
    const no = ++this.#callNo;
    this.calls.set(no, {
      no,
      holder,
      what,
      startStep: this.steps,
      ...(reissue ? { reissue } : {}),
    });
    this.truth.exercise('G7');
    run().then(
      (value) => {
        if (!this.calls.delete(no)) return;
        after?.(value);
      },
      (error: unknown) => {
        if (!this.calls.delete(no)) return;
        const code = error instanceof OutboxError ? error.code : undefined;
        if (code === undefined || !ALLOWED[what]!.includes(code))
          this.truth.fail(
            'G7',
            'unclear-error',
            `${holder.name} ${what} failed with ${code ?? String(error)}`,
          );
        else this.count(`error:${what}:${code}`);
      },
    );
  }

  /** G7: no call of a live holder waits past its bound. */
  checkCalls(): void {
    for (const call of this.calls.values()) {
      const bound = CALL_BOUND_STEPS[call.what] ?? DEFAULT_CALL_BOUND;
      if (this.steps - call.startStep > bound)
        this.truth.fail(
          'G7',
          'call-hung',
          `${call.holder.name} ${call.what} #${call.no} has not answered after ${bound} steps`,
        );
    }
  }

  // ------------------------------------------------------------------- the app's ops

  #editId(): string {
    return `edit-${String(++this.#editNo).padStart(5, '0')}`;
  }

  /** The server id the app knows for a slot: from the create's receipt, once it has one. */
  #serverId(slot: Slot): string | undefined {
    if (slot.createId === undefined) return slot.targetId;
    const key = this.truth.appliedBy.get(slot.createId);
    const receipt = key === undefined ? undefined : this.truth.receipts.get(key);
    return receipt?.serverId;
  }

  #base(
    owner: string,
    serverId: string | undefined,
    base: 'none' | 'known' | 'stale',
  ): number | undefined {
    if (serverId === undefined || base === 'none') return undefined;
    const known = this.truth.knownRevision(owner, serverId) ?? 1;
    return base === 'known' ? known : known > 1 ? known - 1 : undefined;
  }

  #enqueue(holder: Holder, owner: string, draft: EditDraft, after?: () => void): void {
    this.truth.drafts.set(draft.id, draft);
    const input = {
      id: draft.id,
      collection: draft.collection,
      kind: draft.kind,
      ...(draft.kind === 'create' ? {} : { targetId: draft.targetId }),
      ...(draft.payload === undefined ? {} : { payload: draft.payload }),
      ...(draft.baseRevision === undefined ? {} : { baseRevision: draft.baseRevision }),
    };
    const send = (on: Holder) =>
      this.call(
        on,
        'enqueue',
        () => on.api(owner).enqueue(input),
        (result) => {
          this.count(`outcome:${result.outcome}`);
          after?.();
          // The engine flushes soon after an enqueue (§12).
          if (this.rng.chance(0.5)) this.call(on, 'flush', () => on.api(owner).flush());
        },
        () => {
          const other = this.liveHolders();
          if (other.length > 0) send(this.rng.pick(other));
        },
      );
    send(holder);
  }

  /**
   * The page `PUT`s one of its records through the worker that controls it, sometimes twice in
   * a row, so the second waits behind the first (§22).
   */
  #pagePut(owner: string): void {
    // The worker that controls the page keeps it while it lives; only its death hands the page
    // to another (its own route then knows nothing of what the dead one let through).
    const live = this.liveHolders();
    if (this.#routeWorker === undefined || !live.includes(this.#routeWorker))
      this.#routeWorker = live[0];
    const worker = this.#routeWorker;
    if (worker === undefined) return;
    this.count('actor:workbox-route');
    const record = this.#page.pick(routeRecords(owner));
    const times = this.#page.chance(0.35) ? 2 : 1;
    for (let i = 0; i < times; i++) {
      const n = ++this.#pageNo;
      const title = this.on('rejections') && this.#page.chance(0.2) ? '' : `w${n}`;
      void worker.route.put(owner, record, { title });
    }
  }

  /** The record a typing user goes on editing, while it is there to edit. */
  #typedSlot(owner: string, op: Extract<Op, { op: 'update' | 'delete' }>): Slot | undefined {
    if (op.op !== 'update' || !this.actors.has('typing')) return undefined;
    const last = this.#lastEdited.get(owner);
    if (last === undefined || !this.#typing.chance(0.75)) return undefined;
    if ((op.pending && last.createId === undefined) || !this.slots.get(owner)?.includes(last))
      return undefined;
    this.count('actor:typing');
    return last;
  }

  #pickSlot(owner: string, index: number, pending: boolean): Slot | undefined {
    const all = this.slots.get(owner) ?? [];
    const pool = pending ? all.filter((s) => s.createId !== undefined) : all;
    return pool.length === 0 ? undefined : pool[index % pool.length];
  }

  #payload(fields: Fields): Record<string, Json> {
    return { ...fields };
  }

  /** Runs one op of the script; returns what it did, for the trace. */
  async op(op: Op): Promise<string> {
    const ownerName = 'owner' in op ? this.owners[op.owner]! : '';
    const holder =
      'holder' in op && op.op !== 'kill' && op.op !== 'restart' && op.op !== 'clock-step'
        ? this.holders[op.holder]
        : undefined;
    const needsHolder =
      'holder' in op && op.op !== 'kill' && op.op !== 'restart' && op.op !== 'clock-step';
    if (needsHolder && holder === undefined) return 'no live holder in that slot';
    // A busy legacy tab flushes as the app edits (its own draws: other seeds run as before).
    if (
      (op.op === 'update' || op.op === 'delete') &&
      this.actors.has('legacy-busy') &&
      this.actors.has('legacy-v0') &&
      this.#busy.chance(0.5)
    ) {
      this.count('actor:legacy-busy');
      void this.legacy.flush(ownerName);
    }
    if (op.op === 'update' && this.actors.has('workbox-route') && this.#page.chance(0.5))
      this.#pagePut(ownerName);
    switch (op.op) {
      case 'create': {
        this.count('actor:create');
        const id = this.#editId();
        this.#enqueue(
          holder!,
          ownerName,
          {
            id,
            owner: ownerName,
            collection: 'notes',
            kind: 'create',
            targetId: `pending:${id}`,
            payload: this.#payload(op.fields),
            baseRevision: undefined,
            by: 'app',
          },
          () => this.slots.get(ownerName)!.push({ targetId: `pending:${id}`, createId: id }),
        );
        return `create ${id}`;
      }
      case 'update':
      case 'delete': {
        const slot =
          this.#typedSlot(ownerName, op) ?? this.#pickSlot(ownerName, op.slot, op.pending);
        if (slot === undefined) return 'no such record';
        if (op.op === 'update') this.#lastEdited.set(ownerName, slot);
        const serverId = this.#serverId(slot);
        const targetId =
          op.pending || serverId === undefined ? `pending:${slot.createId}` : serverId;
        const pending = targetId.startsWith('pending:');
        this.count(`actor:${op.op}${pending ? '-pending' : ''}`);
        const id = this.#editId();
        const payload = op.op === 'update' ? this.#payload(op.fields) : undefined;
        const baseRevision = pending ? undefined : this.#base(ownerName, serverId, op.base);
        this.#enqueue(
          holder!,
          ownerName,
          {
            id,
            owner: ownerName,
            collection: 'notes',
            kind: op.op,
            targetId,
            payload,
            baseRevision,
            by: 'app',
          },
          op.op === 'delete'
            ? () => {
                const list = this.slots.get(ownerName)!;
                const at = list.indexOf(slot);
                if (at >= 0) list.splice(at, 1);
              }
            : undefined,
        );
        return `${op.op} ${id} of ${targetId}${baseRevision === undefined ? '' : ` @${baseRevision}`}`;
      }
      case 'cross-edit': {
        const other = this.owners[(op.owner + 1) % this.owners.length]!;
        const slot = this.#pickSlot(other, op.slot, true) ?? this.#pickSlot(other, op.slot, false);
        if (slot === undefined) return 'no record of the other owner';
        this.count('actor:cross-owner');
        const id = this.#editId();
        const targetId = slot.createId !== undefined ? `pending:${slot.createId}` : slot.targetId;
        this.#enqueue(holder!, ownerName, {
          id,
          owner: ownerName,
          collection: 'notes',
          kind: 'update',
          targetId,
          payload: this.#payload(op.fields),
          baseRevision: undefined,
          by: 'app',
        });
        return `${ownerName} edits ${other}'s ${targetId} as ${id}`;
      }
      case 'flush':
        this.count('actor:flush');
        this.call(holder!, 'flush', () => holder!.api(ownerName).flush({ force: op.force }));
        return `flush${op.force ? ' (forced)' : ''}`;
      case 'retry':
      case 'discard': {
        const rows = this.ownRows(ownerName).filter((row) =>
          op.op === 'retry'
            ? row.state === 'blocked'
            : row.state === 'blocked' || row.state === 'held',
        );
        if (rows.length === 0) return `nothing to ${op.op}`;
        const row = rows[op.pick % rows.length]!;
        this.count(`actor:${op.op}`);
        const api = holder!.api(ownerName);
        this.call(holder!, op.op, () =>
          op.op === 'retry' ? api.retry(row.id) : api.discard(row.id),
        );
        return `${op.op} ${row.id} (${row.blockedCode ?? row.state})`;
      }
      case 'resume-held':
        this.count('actor:resume-held');
        this.call(holder!, 'resumeHeld', () => holder!.api(ownerName).resumeHeld());
        return 'resumeHeld';
      case 'restore': {
        // An unsettled entry has no final revision to restore at (§10.1).
        const entries = [...this.truth.ledger.values()].filter(
          (e) => e.owner === ownerName && !e.unsettled,
        );
        if (entries.length === 0) return 'no conflict to restore';
        const entry = entries[op.pick % entries.length]!;
        this.count('actor:restore');
        this.call(holder!, 'restore', () => holder!.api(ownerName).restore(entry.successorId));
        return `restore ${entry.successorId}`;
      }
      case 'read': {
        const api = holder!.api(ownerName);
        this.call(holder!, 'rows', () => api.rows());
        this.call(holder!, 'stats', () => api.stats());
        return 'rows + stats';
      }
      case 'kill':
        return this.kill(op.holder);
      case 'restart': {
        const was = this.holders[op.holder];
        if (was) this.kill(op.holder);
        this.count('actor:restart');
        const started = await this.startHolder(op.holder);
        return `started ${started.name}${was ? ` in place of ${was.name}` : ''}`;
      }
      case 'corrupt':
        return this.corrupt(ownerName, op.slot, op.numeric, op.flaw);
      case 'other-device': {
        const ids = (this.slots.get(ownerName) ?? [])
          .map((slot) => this.#serverId(slot))
          .filter(
            (id): id is string =>
              id !== undefined && this.server.records.get(id)?.deleted === false,
          );
        if (ids.length === 0) return 'no record on the server';
        const id = ids[op.slot % ids.length]!;
        this.count('fault:other-device');
        this.server.editElsewhere(id, { other: `d${++this.#otherNo}` });
        return `another device edits ${id} (now r${this.server.records.get(id)!.revision})`;
      }
      case 'v0-enqueue':
        return this.legacy.enqueue(ownerName, op);
      case 'v0-flush':
        this.count('actor:legacy-v0');
        void this.legacy.flush(ownerName);
        return 'v0 flush';
      case 'sign-out': {
        if (op.on) {
          this.signedOut.add(ownerName);
          this.count('actor:sign-out');
          return `${ownerName} signs out; the other owners stay signed in`;
        }
        if (!this.signedOut.delete(ownerName)) return `${ownerName} is signed in`;
        this.count('actor:sign-in');
        // Signing in hands the credentials over, which lets go the rows held for want of them.
        const holder = this.rng.pick(this.liveHolders());
        if (holder)
          this.call(holder, 'resumeHeld', () =>
            holder.api(ownerName).resumeHeld({ code: 'auth_required' }),
          );
        return `${ownerName} signs in again`;
      }
      case 'sleep': {
        // The device sleeps: every clock jumps ahead together, and the server's sweep runs
        // once the days have passed (SPEC §15).
        const ms = op.days * DAY_MS;
        this.count('fault:sleep');
        this.waitUntil = Math.max(this.waitUntil, this.sched.now + ms);
        this.sched.add(
          'clock',
          `${op.days} days have passed; the server forgets keys older than its retention`,
          () => ` (${this.net.forgetOlderThan(this.sched.now - SIM_RETENTION_MS)} forgotten)`,
          ms,
        );
        return `the device sleeps ${op.days} days`;
      }
      case 'tick':
        if (op.ms >= this.config.leaseMs) this.count('fault:lease-expiry');
        this.wait(op.ms);
        return `the app waits ${op.ms} ms`;
      case 'clock-step': {
        const target = this.holders[op.holder];
        if (!target) return 'no holder';
        target.offset = Math.max(-MAX_SKEW_MS, Math.min(MAX_SKEW_MS, target.offset + op.ms));
        this.count('fault:clock-step');
        return `${target.name}'s clock steps ${op.ms} ms (offset ${target.offset})`;
      }
      case 'window-401':
        this.unauthorized = op.on;
        return `server 401 window ${op.on ? 'opens' : 'closes'}`;
      case 'auth-none':
        if (op.on) this.authNone.add(ownerName);
        else this.authNone.delete(ownerName);
        return `${ownerName} has ${op.on ? 'no' : 'her'} credentials`;
    }
  }

  /** The owner's decodable rows as the shadow holds them. */
  ownRows(owner: string): OutboxRow[] {
    const rows: OutboxRow[] = [];
    for (const [id, value] of this.truth.rows) {
      const row = value as OutboxRow;
      if (typeof id === 'string' && row.owner === owner && typeof row.state === 'string')
        rows.push(row);
    }
    return rows.sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** Writes a corrupted value straight into the store (G7). */
  corrupt(owner: string, index: number, numeric: boolean, flaw: number): string {
    const slot = this.#pickSlot(owner, index, false);
    const n = ++this.#corruptNo;
    // Every valid IndexedDB key type (SPEC §6.1, §20): a run's numeric draws take a number, a
    // Date, an array and binary in turn, starting where its seed says.
    const kind =
      numeric && flaw !== 6
        ? NUMERIC_KEYS[(this.config.seed + this.#numericNo++) % NUMERIC_KEYS.length]!
        : 'string';
    const id = corruptKey(kind, n);
    const value: Record<string, unknown> = {
      v: 1,
      id,
      owner,
      collection: 'notes',
      kind: 'update',
      targetId: slot?.createId ? `pending:${slot.createId}` : (slot?.targetId ?? 'n_1'),
      savedAt: this.sched.now,
      state: 'queued',
      payload: { title: `corrupt${n}` },
    };
    switch (flaw) {
      case 0:
        value.state = 7;
        break;
      case 1:
        value.kind = null;
        break;
      case 2:
        value.request = 'garbage';
        break;
      case 3:
        value.evidence = { attemptCount: -1 };
        break;
      case 4:
        value.claim = { holderId: 5 };
        // A `v` that is not a whole number is corrupt, never a newer format (SPEC §17).
        if (n % 2 === 0) value.v = 'one';
        break;
      case 6:
        // Not corrupt: a row of a newer bundle's format, which this bundle must leave alone (§17).
        value.v = 2;
        break;
      default: {
        let deep: Record<string, unknown> = {};
        const top = deep;
        for (let i = 0; i < 70; i++) deep = deep.next = {} as Record<string, unknown>;
        value.payload = top;
      }
    }
    this.count('actor:corruptor');
    this.count(`corrupt-key:${kind}`);
    const store = this.corruptStore(owner);
    store.replace({ owner, expected: [], put: [value], reason: 'corrupt' }).catch(() => undefined);
    return `corrupt value ${describeKey(id)} for ${value.targetId} (flaw ${flaw})`;
  }

  #corruptStores = new Map<string, SimStore>();
  #corruptReal: Promise<OutboxStore> | undefined;

  corruptStore(owner: string): OutboxStore {
    let store = this.#corruptStores.get(owner);
    if (!store) {
      this.#corruptReal ??= this.openStore();
      const real = this.#corruptReal;
      const lazy = {
        replace: async (plan: ReplacePlan) => (await real).replace(plan),
      } as unknown as OutboxStore;
      store = new SimStore(
        this.sched,
        this.rng,
        this.truth,
        lazy,
        { holder: 'corruptor', owner, kind: 'corrupt' },
        () => this.sched.now,
        { faults: new Set(), live: () => false, count: () => {} },
      );
      this.#corruptStores.set(owner, store);
    }
    return store;
  }

  close(): void {
    for (const holder of this.liveHolders()) holder.real.close();
    void this.#corruptReal?.then((s) => s.close());
    this.legacy.close();
  }
}

/**
 * A legacy v0 writer (SPEC §17): an older bundle sending from a page. It knows `state` and
 * `sentAt` only — no claims, fences, successors, receipts — sends the first row of each record
 * when it is queued (or its `sending` mark is older than the lease), keeps every field it does
 * not know, and compares the row as it saw it before each write.
 */
class LegacyWriter {
  #n = 0;
  #writing: Promise<void> = Promise.resolve();
  #real: Promise<OutboxStore> | undefined;
  readonly #stores = new Map<string, SimStore>();
  readonly #handler = restHandler({ baseUrl: '/api/notes' });
  #fetch: typeof fetch | undefined;

  constructor(private readonly world: World) {}

  #store(owner: string): SimStore {
    let store = this.#stores.get(owner);
    if (!store) {
      this.#real ??= this.world.openStore();
      const real = this.#real;
      const lazy = new Proxy({} as OutboxStore, {
        get:
          (_t, name) =>
          async (...args: unknown[]) => {
            const target = (await real) as unknown as Record<string, (...a: unknown[]) => unknown>;
            return target[name as string]!(...args);
          },
      });
      const { world } = this;
      store = new SimStore(
        world.sched,
        world.rng,
        world.truth,
        lazy,
        { holder: 'v0', owner, kind: 'v0' },
        () => world.sched.now,
        world.storeFaults,
      );
      this.#stores.set(owner, store);
    }
    return store;
  }

  enqueue(owner: string, op: Extract<Op, { op: 'v0-enqueue' }>): string {
    const { world } = this;
    const slots = (world.slots.get(owner) ?? []).filter((s) => s.createId === undefined);
    const slot = slots.length === 0 ? undefined : slots[op.slot % slots.length];
    const create = op.create || slot === undefined;
    const id = `v0row-${String(++this.#n).padStart(5, '0')}`;
    const targetId = create ? `pending:${id}` : slot!.targetId;
    const payload = { ...op.fields } as Record<string, Json>;
    const intent: IntentInfo = {
      collection: 'notes',
      kind: create ? 'create' : 'update',
      targetId,
      payload,
      baseRevision: null,
    };
    const request = buildRowRequest(this.#handler.toRequest(intent), id, null);
    const row = {
      id,
      owner,
      collection: 'notes',
      kind: intent.kind,
      targetId,
      savedAt: world.sched.now,
      state: 'queued',
      payload,
      baseRevision: null,
      request,
    };
    world.count('actor:legacy-v0');
    const draft: EditDraft = {
      id,
      owner,
      collection: 'notes',
      kind: intent.kind,
      targetId,
      payload,
      baseRevision: null,
      by: 'v0',
    };
    world.truth.drafts.set(id, draft);
    // The old page writes its edits one after another, each saved when it is written.
    this.#writing = this.#writing.then(async () => {
      const saved = { ...row, savedAt: world.sched.now };
      try {
        const result = await this.#store(owner).replace({
          owner,
          expected: [{ id, row: null }],
          put: [saved],
          durability: 'strict',
          reason: 'v0-enqueue',
        });
        if (result === 'committed' && create)
          world.slots.get(owner)?.push({ targetId, createId: id });
      } catch {
        // An old page does not retry.
      }
    });
    return `v0 ${intent.kind} ${id} of ${targetId}`;
  }

  async flush(owner: string): Promise<void> {
    const { world } = this;
    const store = this.#store(owner);
    this.#fetch ??= world.net.fetchFor('v0', () => world.sched.now, true);
    let raws: unknown[];
    try {
      raws = await store.scan(owner, { limit: 1_000 });
    } catch {
      return;
    }
    const first = new Map<string, Record<string, unknown>>();
    for (const raw of raws) {
      const row = raw as Record<string, unknown>;
      const key = `${String(row.collection)}\u0000${String(row.targetId)}`;
      if (!first.has(key)) first.set(key, row);
    }
    for (const row of first.values()) {
      const request = row.request as OutboxRow['request'];
      const now = world.sched.now;
      const abandoned =
        row.state === 'sending' &&
        typeof row.sentAt === 'number' &&
        now - row.sentAt >= world.config.leaseMs;
      if (
        (row.state !== 'queued' && !abandoned) ||
        request === undefined ||
        typeof request !== 'object'
      )
        continue;
      if (
        typeof row.targetId !== 'string' ||
        (row.targetId.startsWith('pending:') && row.kind !== 'create')
      )
        continue;
      const sending = { ...row, state: 'sending', sentAt: now };
      try {
        if (
          (await store.replace({
            owner,
            expected: [{ id: row.id as string, row }],
            put: [sending],
            reason: 'v0-send',
          })) !== 'committed'
        )
          continue;
      } catch {
        continue;
      }
      let ok = false;
      try {
        const answer = await this.#fetch(`${ORIGIN}${request.url}`, {
          method: request.method,
          headers: { ...request.headers, authorization: `Bearer ${owner}` },
          body: request.body,
        });
        ok = answer.status >= 200 && answer.status < 300;
      } catch {
        ok = false;
      }
      // A failed send goes back to the queue; its sentAt stays, the mark that it was tried.
      const rest = sending;
      const plan: ReplacePlan = ok
        ? {
            owner,
            expected: [{ id: row.id as string, row: sending }],
            delete: [row.id as string],
            reason: 'v0-settle',
          }
        : {
            owner,
            expected: [{ id: row.id as string, row: sending }],
            put: [{ ...rest, state: 'queued' }],
            reason: 'v0-settle',
          };
      try {
        await store.replace(plan);
      } catch {
        // The next flush looks again.
      }
    }
  }

  close(): void {
    void this.#real?.then((s) => s.close());
  }
}
