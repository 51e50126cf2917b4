import type { Json } from '../../shared/model/json.ts';
import type { RowRequest } from '../../shared/model/row.ts';
import {
  BATCH_MIN_LIMITS,
  BATCH_PATH,
  formatBatchLink,
  readBatchRequest,
} from '../../shared/wire/batch.ts';
import type { ModelServer } from '../support/model-server.ts';
import type { Truth, WireRequest } from './oracles.ts';
import type { Prng } from './prng.ts';
import type { Scheduler } from './scheduler.ts';
import type { Fault } from './swarm-config.ts';

/**
 * The wire between the holders' fetch transports and the model server (SPEC §15, §20). A
 * request leaves when `fetch` is called, arrives at the server at a later step, and its answer
 * travels back at another: faults strike on the way there, at the server and on the way back.
 * Aborting (the transport's timeout) stops a request that has not arrived and loses an answer
 * that has not come back.
 */

export const ORIGIN = 'http://sim.test';

/** The parts of a `Response` the fetch transport reads. */
function response(status: number, headers: Record<string, string>, body: string): Response {
  const all = new Headers(headers);
  return {
    status,
    ok: status >= 200 && status < 300,
    headers: all,
    text: async () => body,
  } as unknown as Response;
}

function problem(status: number, type: string, extra: Record<string, string> = {}): Response {
  return response(
    status,
    { 'content-type': 'application/problem+json', ...extra },
    JSON.stringify({ type }),
  );
}

interface Travel {
  req: WireRequest;
  /** The items of a batch (SPEC §15.1): each a request of its own on the wire. */
  items: WireRequest[];
  /** A batch answer's item statuses, in item order. */
  statuses?: number[];
  arrival?: number;
  /** Its way to the server, as a step (kept to move it when the request is orphaned). */
  land?: { label: string; run: () => string };
  answer?: number;
  arrived: boolean;
  /** Nobody reads the answer (its holder died, or it was aborted): it may still land. */
  orphaned?: 'killed' | 'aborted';
  resolve(value: Response): void;
  reject(error: unknown): void;
}

export interface NetworkOptions {
  faults: ReadonlySet<Fault>;
  /** The server takes batches at `/sync/batch` and says so in a `Link` on every answer. */
  batches: boolean;
  leaseMs: number;
  /** Whether faults may strike now (off while the run drains). */
  live(): boolean;
  /** Whether the server answers 401 now. */
  unauthorized(): boolean;
  count(fault: string): void;
}

export class Network {
  #no = 0;
  readonly #travels = new Map<WireRequest, Travel>();
  /** Requests nobody waits for any more that may still land (killed holders', aborted ones). */
  readonly #orphans = new Set<Travel>();
  /** Keys whose write the server is still committing (409 request-in-progress for a copy). */
  readonly #committing = new Set<string>();

  constructor(
    private readonly sched: Scheduler,
    private readonly rng: Prng,
    readonly server: ModelServer,
    private readonly truth: Truth,
    private readonly options: NetworkOptions,
  ) {}

  /** Ledger keys (`principal \0 key`) the server's sweep forgot. */
  readonly #forgotten = new Set<string>();

  /** When each ledger entry was stored, by the server's clock: a retention forgets by it. */
  readonly #storedAt = new Map<string, number>();

  /** Dates the ledger entries the server stored since the last look (SPEC §15 retention). */
  #stamp(): void {
    for (const key of this.server.ledger.keys())
      if (!this.#storedAt.has(key)) this.#storedAt.set(key, this.sched.now);
  }

  /**
   * The server's sweep (SPEC §15): ledger entries stored before `cutoff` are forgotten, so a
   * resend of such a key is applied again (a second effect, G2) and its receipt lookup is 404.
   * Returns how many were forgotten.
   */
  forgetOlderThan(cutoff: number): number {
    this.#stamp();
    let forgotten = 0;
    for (const [key, at] of this.#storedAt) {
      if (at >= cutoff) continue;
      this.server.ledger.delete(key);
      this.#storedAt.delete(key);
      this.#forgotten.add(key);
      forgotten++;
    }
    return forgotten;
  }

  #on(fault: Fault, p: number): boolean {
    if (!this.options.live() || !this.options.faults.has(fault)) return false;
    if (!this.rng.chance(p)) return false;
    this.options.count(fault);
    return true;
  }

  #delay(): number {
    if (!this.#on('delay', 0.25)) return 0;
    return this.rng.int(0, Math.floor(this.options.leaseMs * 1.6));
  }

  /**
   * A 412 answer of `key`, by key and by the row it was sent for: a row re-issued under a new key
   * (§15 `retention_exceeded`) is superseded by its row id (§10).
   */
  noteConflict(key: string): void {
    this.truth.conflictAnswers.add(key);
    const row = this.truth.keyRow.get(key);
    if (row !== undefined) this.truth.conflictAnswers.add(row);
  }

  /**
   * The `fetch` of one holder (or the legacy writer); `direct` for a page's request a Workbox
   * route's plugin lets through before it is a row (SPEC §22).
   */
  fetchFor(holder: string, clock: () => number, legacy = false, direct = false): typeof fetch {
    return ((input: string, init: RequestInit = {}) =>
      new Promise<Response>((resolve, reject) => {
        const url = new URL(String(input));
        const headers: Record<string, string> = {};
        new Headers(init.headers).forEach((value, name) => {
          headers[name] = value;
        });
        const method = (init.method ?? 'GET').toUpperCase();
        const rawKey = headers['idempotency-key'];
        const key = rawKey === undefined ? undefined : rawKey.replaceAll('"', '');
        const bearer = headers.authorization?.replace(/^Bearer /, '');
        const body = typeof init.body === 'string' ? init.body : null;
        const no = ++this.#no;
        const wire = (k: string | undefined, m: string, path: string): WireRequest => ({
          no,
          holder,
          owner: bearer ?? '',
          method: m,
          path,
          key: k,
          leftAt: this.sched.now,
          done: false,
          legacy,
          ...(direct ? { direct } : {}),
        });
        const batch = method === 'POST' && url.pathname === BATCH_PATH;
        const req = wire(method === 'GET' || batch ? undefined : key, method, url.pathname);
        // Each item of a batch leaves as the request it stands for (§15.1), one after another.
        const items: WireRequest[] = [];
        if (batch) {
          const read = readBatchRequest(JSON.parse(body ?? 'null'));
          for (const item of read.ok ? read.items : []) {
            const itemKey = item.headers['idempotency-key']?.replaceAll('"', '');
            items.push(wire(itemKey, item.method, item.path));
          }
          this.options.count('batch');
        }
        this.truth.leave(req, clock(), this.sched.now);
        for (const item of items) this.truth.leave(item, clock(), this.sched.now);
        const travel: Travel = { req, items, arrived: false, resolve, reject };
        this.#travels.set(req, travel);
        // Batches of different records on the wire together, within the holder's concurrency.
        if (
          batch &&
          [...this.#travels.keys()].some(
            (other) =>
              other !== req && other.path === BATCH_PATH && other.holder === holder && !other.done,
          )
        )
          this.truth.reach('batches-on-the-wire-together');
        const request: RowRequest = {
          requestId: key ?? '',
          fingerprint: '',
          method,
          url: url.pathname,
          headers,
          body,
        };
        travel.land = {
          label: `arrive #${req.no} ${method} ${url.pathname} ${key ?? ''} from ${holder}`,
          run: () => this.#arrive(travel, request, bearer),
        };
        travel.arrival = this.sched.add('net', travel.land.label, travel.land.run, this.#delay());
        init.signal?.addEventListener('abort', () => this.#abort(travel));
      })) as unknown as typeof fetch;
  }

  #arrived(travel: Travel): void {
    this.truth.arrived(travel.req);
    for (const item of travel.items) this.truth.arrived(item);
  }

  #answer(travel: Travel, outcome: Response | 'lost', label: string): void {
    travel.arrived = true;
    this.#processed(travel);
    if (travel.orphaned) {
      // Landed (or lost on the way): nobody reads the answer.
      if (outcome !== 'lost' || label !== 'lost before the server')
        this.truth.reach(`${travel.orphaned}-request-landed`);
      this.#orphans.delete(travel);
      this.#arrived(travel);
      return;
    }
    travel.answer = this.sched.add(
      travel.req.holder,
      `answer #${travel.req.no} to ${travel.req.holder}: ${label}`,
      () => {
        this.#travels.delete(travel.req);
        this.#arrived(travel);
        if (outcome === 'lost') {
          travel.reject(new TypeError('fetch failed'));
          return;
        }
        if (outcome.status === 412 && travel.req.key !== undefined)
          this.noteConflict(travel.req.key);
        // The items of a batch answered 412 met a conflict each, as alone (§15.1).
        travel.items.forEach((item, i) => {
          if (travel.statuses?.[i] === 412 && item.key !== undefined) this.noteConflict(item.key);
        });
        travel.resolve(outcome);
      },
      this.#delay(),
    );
  }

  #processed(travel: Travel): void {
    if (travel.req.legacy && this.sched.now - travel.req.leftAt >= this.options.leaseMs)
      this.truth.reach('legacy-copy-past-lease');
    travel.req.processed = true;
    for (const item of travel.items) item.processed = true;
  }

  /**
   * Nobody will read this request's answer, yet it left: it still lands, no later than `by`
   * (virtual time), and is on the wire until it did.
   */
  #orphan(travel: Travel, by: number, why: 'killed' | 'aborted'): void {
    travel.orphaned = why;
    this.truth.orphaned(travel.req);
    for (const item of travel.items) this.truth.orphaned(item);
    this.#orphans.add(travel);
    const due = travel.arrival === undefined ? undefined : this.sched.due(travel.arrival);
    if (due !== undefined && due > by && travel.land) {
      this.sched.cancel(travel.arrival!);
      travel.arrival = this.sched.add(
        'net',
        `${travel.land.label} (orphaned)`,
        travel.land.run,
        Math.max(0, by - this.sched.now),
      );
    }
  }

  #arrive(travel: Travel, request: RowRequest, principal: string | undefined): string {
    const { req } = travel;
    if (this.#on('lost-before', 0.12)) {
      this.#answer(travel, 'lost', 'lost before the server');
      return ' lost on the way';
    }
    if (principal === undefined || (this.options.live() && this.options.unauthorized())) {
      this.options.count('window-401');
      this.#answer(travel, problem(401, 'unauthorized', { 'www-authenticate': 'Bearer' }), '401');
      return ' 401';
    }
    if (this.#on('http-5xx', 0.12)) {
      const status = this.rng.pick([500, 502, 503, 503, 504]);
      const extra: Record<string, string> =
        status === 503 ? { 'retry-after': String(this.rng.int(0, 3)) } : {};
      this.#answer(travel, problem(status, 'unavailable', extra), String(status));
      return ` ${status}`;
    }
    if (this.#on('http-429', 0.1)) {
      this.#answer(
        travel,
        problem(429, 'too-many', { 'retry-after': String(this.rng.int(0, 3)) }),
        '429',
      );
      return ' 429';
    }
    if (req.method === 'GET') return this.#read(travel, request, principal);
    if (req.path === BATCH_PATH) return this.#batch(travel, request, principal);
    const ledgerKey = `${principal}\u0000${req.key ?? ''}`;
    if (this.#committing.has(ledgerKey)) {
      this.#answer(
        travel,
        problem(409, 'request-in-progress', { 'retry-after': '1' }),
        '409 in progress',
      );
      return ' 409 request-in-progress';
    }
    if (this.#on('in-progress', 0.3)) {
      // The server takes its time to commit: a copy of this key meanwhile meets 409.
      this.#committing.add(ledgerKey);
      this.sched.add(
        'net',
        `server commits #${req.no}`,
        () => {
          this.#committing.delete(ledgerKey);
          return this.#write(travel, request, principal);
        },
        this.rng.int(1, this.options.leaseMs),
      );
      return ' committing slowly';
    }
    return this.#write(travel, request, principal);
  }

  #write(travel: Travel, request: RowRequest, principal: string): string {
    const before = this.server.effects.length;
    // A legacy v0 tab predates SPEC §15's rule: it resends a key at any age (§17).
    if (travel.req.legacy && this.#forgotten.has(`${principal}\u0000${travel.req.key ?? ''}`))
      this.truth.legacyPastRetention.add(travel.req.key ?? '');
    const result = this.server.handle(request, principal);
    this.#stamp();
    for (const effect of this.server.effects.slice(before))
      this.truth.effect(effect, travel.req.legacy);
    if (result.kind !== 'response') {
      this.#answer(travel, 'lost', result.kind);
      return ` ${result.kind}`;
    }
    const applied = this.server.effects.length > before;
    if (result.status === 412 && travel.req.key !== undefined) {
      this.truth.outdated.add(travel.req.key);
      this.truth.conflictSent(travel.req.key, result.status, result.body);
    }
    if (result.status === 422) {
      this.options.count('rejections');
      if (travel.req.key !== undefined && refusal(result.body))
        this.truth.refused.add(travel.req.key);
    }
    const answer = response(result.status, this.#link(result.headers), result.body);
    if (this.#on('lost-after', 0.15)) {
      this.#answer(travel, 'lost', 'lost after the server');
      return ` ${result.status}${applied ? ' applied' : ''}, answer lost`;
    }
    this.#answer(travel, answer, String(result.status));
    return ` ${result.status}${applied ? ' applied' : ''}${result.headers['idempotent-replayed'] ? ' replay' : ''}`;
  }

  /** `POST /sync/batch`: every item through the same checks and ledger, in order (§15.1). */
  #batch(travel: Travel, request: RowRequest, principal: string): string {
    if (!this.options.batches) {
      this.#answer(travel, problem(404, 'not-found'), '404');
      return ' 404 (no batches here)';
    }
    const before = this.server.effects.length;
    const result = this.server.handleBatch(request.body ?? '', principal, (key) =>
      this.#committing.has(`${principal}\u0000${key}`),
    );
    this.#stamp();
    for (const effect of this.server.effects.slice(before))
      this.truth.effect(effect, travel.req.legacy);
    if (result.kind !== 'response') {
      this.#answer(travel, 'lost', result.kind);
      return ` ${result.kind}`;
    }
    travel.statuses = itemStatuses(result.body);
    const bodies = itemBodies(result.body);
    travel.items.forEach((item, i) => {
      if (travel.statuses?.[i] === 412 && item.key !== undefined) {
        this.truth.outdated.add(item.key);
        this.truth.conflictSent(item.key, 412, bodies[i]);
      }
      if (travel.statuses?.[i] === 422 && item.key !== undefined && refusal(bodies[i]))
        this.truth.refused.add(item.key);
    });
    const summary = ` batch [${travel.statuses.join(',')}] ${this.server.effects.length - before} applied`;
    if (this.#on('lost-after', 0.15)) {
      this.#answer(travel, 'lost', 'lost after the server');
      return `${summary}, answer lost`;
    }
    this.#answer(travel, response(result.status, this.#link(result.headers), result.body), 'batch');
    return summary;
  }

  /** Headers of an answer, with the batch endpoint advertised where the server takes batches. */
  #link(headers: Record<string, string>): Record<string, string> {
    return this.options.batches
      ? { ...headers, link: formatBatchLink(BATCH_PATH, BATCH_MIN_LIMITS) }
      : headers;
  }

  #read(travel: Travel, request: RowRequest, principal: string): string {
    const receipt = /^\/idempotency\/([^/]+)$/.exec(request.url);
    if (receipt) {
      const found = this.server.lookup(principal, decodeURIComponent(receipt[1]!));
      const answer =
        found.kind === 'found'
          ? response(
              200,
              { 'content-type': 'application/json' },
              JSON.stringify({ status: found.status, body: found.body }),
            )
          : problem(404, 'not-found');
      this.#answer(travel, answer, found.kind);
      return ` receipt ${found.kind}`;
    }
    const history = /^\/api\/notes\/([^/]+)\/history\/(\d+)$/.exec(request.url);
    if (history) {
      const found = this.server.version(
        principal,
        decodeURIComponent(history[1]!),
        Number(history[2]),
      );
      const answer =
        found.kind === 'found'
          ? response(
              200,
              { 'content-type': 'application/json' },
              JSON.stringify(found.version as unknown as Json),
            )
          : problem(404, 'not-found');
      this.#answer(travel, answer, found.kind);
      return ` history ${found.kind}`;
    }
    this.#answer(travel, problem(404, 'not-found'), '404');
    return ' 404';
  }

  #abort(travel: Travel): void {
    if (!this.#travels.has(travel.req)) return;
    this.#travels.delete(travel.req);
    if (travel.answer !== undefined) this.sched.cancel(travel.answer);
    // An abort stops what has not left; bytes already sent can still land (SPEC §4's very risk):
    // at once, and the request is on the wire until then.
    const lands = !travel.arrived && travel.arrival !== undefined && this.rng.chance(0.25);
    if (lands) this.#orphan(travel, this.sched.now, 'aborted');
    else {
      if (travel.arrival !== undefined && !travel.arrived) this.sched.cancel(travel.arrival);
      this.#arrived(travel);
    }
    this.sched.log(
      `abort #${travel.req.no} of ${travel.req.holder}${travel.arrived ? ' (answer lost)' : lands ? ' (its bytes still land)' : ' (never arrived)'}`,
    );
    travel.reject(new DOMException('The operation was aborted.', 'AbortError'));
  }

  /**
   * A holder dies: nobody reads its requests' answers. Half of those not yet at the server never
   * get there; the others still land, by the end of their claim at the latest (the browser
   * tears the connection down), and are on the wire until they did.
   */
  kill(holder: string): void {
    for (const travel of [...this.#travels.values()]) {
      if (travel.req.holder !== holder) continue;
      this.#travels.delete(travel.req);
      if (travel.arrived || travel.arrival === undefined) {
        this.#arrived(travel);
        continue;
      }
      if (this.rng.chance(0.5)) {
        this.sched.cancel(travel.arrival);
        this.#arrived(travel);
      } else this.#orphan(travel, travel.req.deadline ?? this.sched.now, 'killed');
    }
  }

  /** Requests still travelling or committing, and orphaned ones that may still land. */
  get busy(): number {
    return this.#travels.size + this.#committing.size + this.#orphans.size;
  }
}

/**
 * Whether an answer is the server's validation refusing the request's bytes (422
 * `validation-failed`): the model server refuses them for what they say, so every copy of the
 * key is refused the same, wherever it lands.
 */
function refusal(body: unknown): boolean {
  const parsed = typeof body === 'string' ? safeParse(body) : body;
  return (parsed as { type?: unknown } | null)?.type === 'validation-failed';
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The bodies of a batch answer's items, in order. */
function itemBodies(body: string): unknown[] {
  try {
    const parsed = JSON.parse(body) as { items?: Array<{ body?: unknown }> };
    return (parsed.items ?? []).map((item) => item.body);
  } catch {
    return [];
  }
}

/** The statuses of a batch answer's items, in order. */
function itemStatuses(body: string): number[] {
  try {
    const parsed = JSON.parse(body) as { items?: Array<{ status?: unknown }> };
    return (parsed.items ?? []).map((item) => (typeof item.status === 'number' ? item.status : 0));
  } catch {
    return [];
  }
}
