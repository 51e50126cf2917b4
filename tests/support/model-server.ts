import type { Json } from '../../shared/model/json.ts';
import type {
  HistoryLookup,
  ReceiptLookup,
  Transport,
  TransportResult,
} from '../../shared/model/ports.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import { readBatchRequest } from '../../shared/wire/batch.ts';

/**
 * A small in-memory model of the reference server (SPEC §15) for unit and scenario tests:
 * idempotency ledger keyed by (principal, key) with fingerprints, revision compare-and-set,
 * and fault hooks. Every applied write is counted, so a duplicate effect is visible.
 */
export interface ModelRecord {
  id: string;
  owner: string;
  revision: number;
  data: Record<string, Json>;
  deleted: boolean;
}

export interface Effect {
  key: string;
  owner: string;
  method: string;
  id: string;
  revision: number;
}

interface Stored {
  fingerprint: string;
  status: number;
  body: string;
}

/** `reject` answers 422 `validation-failed` and applies nothing, as for an invalid payload. */
type Fault = 'drop' | 'fail503' | 'network' | 'unauthorized' | 'reject';

/** A version a write superseded, as the reference server keeps it (SPEC §10.1). */
export interface ModelVersion {
  revision: number;
  data: Record<string, Json>;
  supersededBy: string | null;
}

export class ModelServer {
  readonly records = new Map<string, ModelRecord>();
  readonly ledger = new Map<string, Stored>();
  readonly effects: Effect[] = [];
  /** Every request that reached the server, in order: `METHOD url key`. */
  readonly seen: { method: string; url: string; key: string; owner: string }[] = [];
  private nextId = 1;
  private faults: Fault[] = [];
  /** Include the server copy in 412 answers (SPEC §15 "optionally `current`"). */
  sendCurrentOnConflict = true;
  /** Keep superseded versions and name them in 412 answers (SPEC §10.1), as the reference server does. */
  keepsHistory = true;
  /** Superseded versions by `owner \0 id \0 revision`. */
  readonly history = new Map<string, ModelVersion>();
  /** Runs before each write is checked: "another device" that keeps editing, for instance. */
  beforeApply?: (request: RowRequest) => void;
  /**
   * Refuses a write as the server's validation would (422 `validation-failed`, say), after the
   * ledger check and before anything is applied; nothing is stored for it.
   */
  reject?: (request: RowRequest) => { status: number; body: Json } | undefined;
  /** Where the batch endpoint is (SPEC §15.1); none by default: a batch gets 404. */
  batchPath: string | undefined;
  /** Advertise the endpoint with a `Link` on every answer, as the reference server does. */
  advertiseBatches = false;
  /** Every batch that reached the server (SPEC §15.1): the keys of its items, in item order. */
  readonly batches: string[][] = [];

  /** Queues faults for the next requests, in order. */
  inject(...faults: Fault[]): void {
    this.faults.push(...faults);
  }

  /** An edit by another device: bumps the record's revision outside the outbox. */
  editElsewhere(id: string, data: Record<string, Json> = {}): void {
    const record = this.records.get(id);
    if (!record) throw new Error(`no record ${id}`);
    this.supersede(record, null);
    record.revision++;
    Object.assign(record.data, data);
  }

  /** Keeps the record's current version before a write replaces it. */
  private supersede(record: ModelRecord, key: string | null): void {
    if (!this.keepsHistory) return;
    this.history.set(`${record.owner}\u0000${record.id}\u0000${record.revision}`, {
      revision: record.revision,
      data: { ...record.data },
      supersededBy: key,
    });
  }

  /** `GET /api/notes/:id/history/:revision` for `owner`: a superseded version, or the current one. */
  version(owner: string, id: string, revision: number): HistoryLookup {
    const kept = this.history.get(`${owner}\u0000${id}\u0000${revision}`);
    if (kept)
      return {
        kind: 'found',
        version: {
          revision,
          value: { ...kept.data },
          supersededBy: kept.supersededBy,
          supersededAt: 0,
        },
      };
    const record = this.records.get(id);
    if (
      this.keepsHistory &&
      record?.owner === owner &&
      !record.deleted &&
      record.revision === revision
    )
      return {
        kind: 'found',
        version: { revision, value: { ...record.data }, supersededBy: null, supersededAt: null },
      };
    return { kind: 'not_found' };
  }

  seed(owner: string, data: Record<string, Json> = {}): ModelRecord {
    const record = { id: `n_${this.nextId++}`, owner, revision: 1, data, deleted: false };
    this.records.set(record.id, record);
    return record;
  }

  effectsFor(key: string): number {
    return this.effects.filter((e) => e.key === key).length;
  }

  /** Handles one request as the reference server would; `drop` applies, then loses the answer. */
  handle(request: RowRequest, owner: string): TransportResult {
    return this.run(request, owner, this.faults.shift());
  }

  /**
   * Handles a batch body (SPEC §15.1) as the reference server's `POST /sync/batch` would: each
   * item runs as its request alone, in order, and gets its own answer. The next fault acts on
   * the whole batch: `network` runs nothing, `unauthorized` and `fail503` answer for every item,
   * `drop` runs every item and loses the answer.
   */
  /**
   * `busy`: keys another request of the owner is still committing; their items meet 409
   * `request-in-progress`, as a single request of the key would (§15.1: every item through the
   * same checks and ledger).
   */
  handleBatch(body: string, owner: string, busy?: (key: string) => boolean): TransportResult {
    const fault = this.faults.shift();
    if (fault === 'network') return { kind: 'network_error', message: 'injected' };
    const read = readBatchRequest(JSON.parse(body));
    if (!read.ok) return this.respond(400, { type: 'batch-malformed', detail: read.detail });
    this.batches.push(read.items.map((item) => keyOf(item.headers)));
    if (fault === 'unauthorized') return this.respond(401, { type: 'unauthorized' });
    if (fault === 'fail503')
      return { ...this.respond(503, { type: 'unavailable' }), headers: { 'retry-after': '1' } };
    const items = read.items.map((item) => {
      const key = keyOf(item.headers);
      if (key !== undefined && busy?.(key)) {
        const answer = this.respond(409, { type: 'request-in-progress' });
        if (answer.kind !== 'response') throw new Error('an item always has an answer');
        return {
          status: 409,
          headers: { ...answer.headers, 'retry-after': '1' },
          body: answer.body,
        };
      }
      const answer = this.run(
        { requestId: '', fingerprint: '', ...item, url: item.path },
        owner,
        undefined,
      );
      if (answer.kind !== 'response') throw new Error('an item always has an answer');
      return { status: answer.status, headers: answer.headers, body: answer.body };
    });
    if (fault === 'drop') return { kind: 'network_error', message: 'response dropped' };
    return this.respond(200, { items });
  }

  private run(request: RowRequest, owner: string, fault: Fault | undefined): TransportResult {
    if (fault === 'network') return { kind: 'network_error', message: 'injected' };
    const key = keyOf(request.headers);
    this.seen.push({ method: request.method, url: request.url, key, owner });
    if (fault === 'unauthorized') return this.respond(401, { type: 'unauthorized' });
    if (fault === 'reject') return this.respond(422, { type: 'validation-failed' });
    if (fault === 'fail503')
      return {
        ...this.respond(503, { type: 'unavailable' }),
        headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
      };
    const fingerprint = `${request.method} ${request.url} ${request.headers['content-digest'] ?? ''}`;
    const ledgerKey = `${owner}\u0000${key}`;
    const stored = this.ledger.get(ledgerKey);
    if (stored) {
      if (stored.fingerprint !== fingerprint)
        return this.respond(422, { type: 'idempotency-key-reused' });
      const replay = {
        kind: 'response' as const,
        status: stored.status,
        headers: { 'idempotent-replayed': 'true' },
        body: stored.body,
      };
      return fault === 'drop' ? { kind: 'network_error', message: 'response dropped' } : replay;
    }
    this.beforeApply?.(request);
    const refused = this.reject?.(request);
    if (refused) return this.respond(refused.status, refused.body);
    const result = this.apply(request, owner, key);
    // Only outcomes of a write are stored; a failed precondition leaves nothing (seed 001).
    if (result.status < 300)
      this.ledger.set(ledgerKey, { fingerprint, status: result.status, body: result.body });
    if (fault === 'drop') return { kind: 'network_error', message: 'response dropped' };
    return result;
  }

  private respond(status: number, body: Json, headers: Record<string, string> = {}) {
    return {
      kind: 'response' as const,
      status,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    };
  }

  private apply(request: RowRequest, owner: string, key: string) {
    const [, , id] = request.url.split('/').slice(1);
    const body = request.body ? (JSON.parse(request.body) as Record<string, Json>) : {};
    if (request.method === 'POST') {
      const record = this.seed(owner, body);
      this.effects.push({ key, owner, method: 'POST', id: record.id, revision: 1 });
      return this.respond(201, { id: record.id, revision: 1, ...record.data });
    }
    const record = id === undefined ? undefined : this.records.get(decodeURIComponent(id));
    if (!record || record.owner !== owner || record.deleted)
      return this.respond(404, { type: 'not-found' });
    const ifMatch = request.headers['if-match']?.replaceAll('"', '');
    if (ifMatch !== undefined && Number(ifMatch) !== record.revision) {
      return this.respond(
        412,
        {
          type: 'revision-conflict',
          currentRevision: record.revision,
          ...(this.sendCurrentOnConflict ? { current: { ...record.data } } : {}),
          ...(this.keepsHistory
            ? {
                history: {
                  revision: record.revision,
                  href: `/api/notes/${record.id}/history/${record.revision}`,
                },
              }
            : {}),
        },
        { etag: `"${record.revision}"` },
      );
    }
    this.supersede(record, key);
    record.revision++;
    if (request.method === 'DELETE') {
      record.deleted = true;
      this.effects.push({ key, owner, method: 'DELETE', id: record.id, revision: record.revision });
      return this.respond(200, { id: record.id, revision: record.revision, deleted: true });
    }
    Object.assign(record.data, body);
    this.effects.push({
      key,
      owner,
      method: request.method,
      id: record.id,
      revision: record.revision,
    });
    return this.respond(200, { id: record.id, revision: record.revision, ...record.data });
  }

  lookup(owner: string, key: string): ReceiptLookup {
    const stored = this.ledger.get(`${owner}\u0000${key}`);
    return stored
      ? { kind: 'found', status: stored.status, body: JSON.parse(stored.body) as Json }
      : { kind: 'not_found' };
  }
}

function keyOf(headers: Record<string, string>): string {
  return (headers['idempotency-key'] ?? '').replaceAll('"', '');
}

/**
 * A transport onto the model with a gate: while a holder's gate is closed its requests wait
 * at the door (already claimed, not yet answered) — how tests hold a request "in flight".
 */
export class GatedTransport implements Transport {
  private waiting: (() => void)[] = [];
  private closed = false;
  /** Answers held back: the server applied the request, the holder has not heard yet. */
  private late: { resolve: (r: TransportResult) => void; result: TransportResult }[] = [];
  holdAnswers = false;
  lookupFails = false;
  /** History lookups fail as the network would (SPEC §10.1 `restore` while offline). */
  historyFails = false;
  /** Every history lookup, by URL. */
  readonly historyLookups: string[] = [];
  /** Checks made as a request leaves, before the server sees it. */
  beforeSend?: (request: RowRequest) => Promise<void>;
  /** Answers the next request with this instead of the server's answer (after the server ran). */
  answerWith?: TransportResult;

  constructor(
    readonly server: ModelServer,
    readonly log: string[] = [],
    readonly name = '?',
  ) {}

  close(): void {
    this.closed = true;
  }

  open(): void {
    this.closed = false;
    for (const go of this.waiting.splice(0)) go();
  }

  /** Delivers answers held back by `holdAnswers` (a late answer, SPEC §18 row 3). */
  release(): void {
    this.holdAnswers = false;
    for (const { resolve, result } of this.late.splice(0)) resolve(result);
  }

  get pending(): number {
    return this.waiting.length + this.late.length;
  }

  async send(request: RowRequest, ctx: { owner: string }): Promise<TransportResult> {
    if (this.closed) await new Promise<void>((go) => this.waiting.push(go));
    await this.beforeSend?.(request);
    this.log.push(`send:${this.name}:${request.requestId}`);
    let result = this.server.handle(request, ctx.owner);
    if (this.answerWith !== undefined) {
      result = this.answerWith;
      this.answerWith = undefined;
    }
    if (!this.holdAnswers) return result;
    return new Promise((resolve) => this.late.push({ resolve, result }));
  }

  async lookupReceipt(requestId: string, ctx: { owner: string }): Promise<ReceiptLookup> {
    if (this.lookupFails) return { kind: 'error', message: 'offline' };
    return this.server.lookup(ctx.owner, requestId);
  }

  async lookupHistory(url: string, ctx: { owner: string }): Promise<HistoryLookup> {
    this.historyLookups.push(url);
    if (this.historyFails) return { kind: 'error', code: 'network', message: 'offline' };
    const match = /^\/api\/notes\/([^/]+)\/history\/(\d+)$/.exec(url);
    if (!match) return { kind: 'not_found' };
    return this.server.version(ctx.owner, decodeURIComponent(match[1]!), Number(match[2]));
  }
}
