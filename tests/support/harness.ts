import { IDBFactory } from 'fake-indexeddb';
import type { OutboxCore } from '../../shared/core/outbox-api.ts';
import { createOutboxCore } from '../../shared/core/outbox-core.ts';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import type { FlushReport, OutboxApi, OutboxEvent } from '../../shared/model/page-api.ts';
import type { Clock, Transport } from '../../shared/model/ports.ts';
import { decodeRow, type OutboxRow } from '../../shared/model/row.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { openIdbStore } from '../../shared/store/idb.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { countingIds, fixedClock, type TestClock } from './clock.ts';
import { GatedTransport, ModelServer } from './model-server.ts';

export const LEASE = 10_000;
export const OWNER = 'user-1';

/** One sender instance (a worker or a tab) on a shared store, with its own gate and ids. */
export interface Holder {
  name: string;
  core: OutboxCore;
  api: OutboxApi;
  transport: GatedTransport;
  store: OutboxStore;
}

export type StoreKind = 'memory' | 'idb';

/**
 * Two (or more) holders on one store — separate connections, as two tabs or a tab and a worker
 * would have — with a fixed clock, a model server and one event log.
 */
export class World {
  readonly clock: TestClock = fixedClock();
  readonly server = new ModelServer();
  readonly log: string[] = [];
  readonly holders: Holder[] = [];
  private counter = 0;

  private constructor(
    readonly kind: StoreKind,
    private readonly open: () => Promise<OutboxStore>,
  ) {}

  static async create(kind: StoreKind): Promise<World> {
    const name = `world-${Math.random().toString(36).slice(2)}`;
    const factory = new IDBFactory();
    return new World(kind, async () =>
      kind === 'memory'
        ? createMemoryStore({ name })
        : openIdbStore({ name, indexedDB: factory, broadcast: false }),
    );
  }

  handlers(overrides: Partial<CollectionHandler> = {}): Record<string, CollectionHandler> {
    // The model server takes an edit without If-Match (it then applies it blind), so the
    // scenarios may enqueue one without a baseRevision.
    const notes = { ...restHandler({ baseUrl: '/api/notes' }), requiresRevision: false };
    return { notes: { ...notes, ...overrides } };
  }

  async holder(
    name: string,
    options: {
      owner?: string;
      handlers?: Record<string, CollectionHandler>;
      concurrency?: number;
      /** Rows read per selection batch (SPEC §7); the core's default otherwise. */
      batchSize?: number;
      /** Most claims and ACKs in one transaction of a flush (§4); the core's default otherwise. */
      plansPerCommit?: number;
      /** Wraps the store, e.g. to inject storage faults. */
      wrapStore?: (store: OutboxStore) => OutboxStore;
      /** Sends through this instead of the gate (e.g. the real fetch transport). */
      transport?: Transport;
      /** The holder's randomness for backoff jitter (a fixed 0.5 by default). */
      random?: () => number;
      /** This holder's own clock (skew between holders); the world's by default. */
      clock?: Clock;
      /** Whether the holder has credentials for an owner (SPEC §13); none by default. */
      hasCredentials?: (owner: string) => Promise<boolean>;
    } = {},
  ): Promise<Holder> {
    const opened = await this.open();
    const store = options.wrapStore ? options.wrapStore(opened) : opened;
    const transport = new GatedTransport(this.server, this.log, name);
    const core = createOutboxCore({
      store,
      transport: options.transport ?? transport,
      clock: options.clock ?? this.clock,
      ids: {
        ...countingIds(`${name}${this.counter++}`),
        ...(options.random ? { random: options.random } : {}),
      },
      handlers: options.handlers ?? this.handlers(),
      holderId: name,
      bundle: 'test',
      leaseMs: LEASE,
      concurrency: options.concurrency ?? 4,
      ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
      ...(options.plansPerCommit === undefined ? {} : { plansPerCommit: options.plansPerCommit }),
      onEvent: (event) => this.record(name, event),
      ...(options.hasCredentials ? { hasCredentials: options.hasCredentials } : {}),
    });
    const holder = { name, core, api: core.forOwner(options.owner ?? OWNER), transport, store };
    this.holders.push(holder);
    return holder;
  }

  private record(name: string, event: OutboxEvent): void {
    switch (event.type) {
      case 'claimed':
        this.log.push(`claim:${name}:${event.id}:${event.fence}`);
        break;
      case 'settled':
        this.log.push(`settle:${name}:${event.id}:${event.outcome}${event.stale ? ':stale' : ''}`);
        break;
      case 'converted':
        this.log.push(`convert:${event.intentId}->${event.into}`);
        break;
      case 'conflict':
        this.log.push(
          `conflict:${name}:${event.id}${event.successorId ? `->${event.successorId}` : ''}`,
        );
        break;
      case 'storm':
        this.log.push(`storm:${name}:${event.id}`);
        break;
      default:
        break;
    }
  }

  /**
   * Holds `holder`'s requests at the door and starts its flush, returning once it claimed
   * `rowId` with `fence`: the row is in flight. Await `done` after opening the gate.
   */
  async holdInFlight(
    holder: Holder,
    rowId: string,
    fence = 1,
  ): Promise<{ done: Promise<FlushReport> }> {
    holder.transport.close();
    const done = holder.api.flush();
    await this.until(
      () => this.log.includes(`claim:${holder.name}:${rowId}:${fence}`),
      `${rowId} claimed`,
    );
    return { done };
  }

  /** Every row in the store for an owner, parsed. */
  async rows(owner = OWNER): Promise<OutboxRow[]> {
    const store = this.holders[0]!.store;
    const raws = await store.scan(owner, { limit: 10_000 });
    return raws.map((raw) => {
      const decoded = decodeRow(raw);
      if (!decoded.ok) throw new Error(`corrupt row ${decoded.id}`);
      return decoded.row;
    });
  }

  async row(id: string): Promise<OutboxRow | undefined> {
    const raw = await this.holders[0]!.store.get(id);
    if (raw === undefined) return undefined;
    const decoded = decodeRow(raw);
    return decoded.ok ? decoded.row : undefined;
  }

  /** Lets pending promise callbacks (store commits, sends) run. */
  async settle(rounds = 20): Promise<void> {
    for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
  }

  /** Waits until a condition holds (polling; the store may be asynchronous). */
  async until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 500; i++) {
      if (await condition()) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  close(): void {
    for (const holder of this.holders) holder.store.close();
  }
}

export const STORE_KINDS: StoreKind[] = ['memory', 'idb'];
