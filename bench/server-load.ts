import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';

/** One HTTP answer as the load generator sees it. */
export interface LoadAnswer {
  status: number;
  replayed: boolean;
  body: string;
}

/** `http.request` over a keep-alive `http.Agent`: for the few setup and check calls. */
export function httpRequest(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<LoadAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, url), { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          replayed: res.headers['idempotent-replayed'] === 'true',
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const HEADER_END = Buffer.from('\r\n\r\n');

/**
 * One keep-alive HTTP/1.1 connection that sends pre-serialised requests one at a time and parses
 * only what the bench needs (status, `Content-Length`, `Idempotent-Replayed`). The load generator
 * shares two cores with the server: `http.request` costs ~70 µs of CPU per request here, this
 * ~15 µs, so the numbers measure the server rather than the client.
 */
export class RawConnection {
  readonly #socket: net.Socket;
  #buffer: Buffer = Buffer.alloc(0);
  #pending: { resolve: (answer: LoadAnswer) => void; reject: (error: Error) => void } | undefined;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (error) => this.#fail(error));
    socket.on('close', () => this.#fail(new Error('connection closed')));
  }

  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: hostname, port: Number(port) }, () =>
        resolve(new RawConnection(socket)),
      );
      socket.once('error', reject);
    });
  }

  /** Sends one complete request (head and body) and resolves with its answer. */
  send(request: string): Promise<LoadAnswer> {
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      this.#socket.write(request);
    });
  }

  close(): void {
    this.#socket.destroy();
  }

  #onData(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const end = this.#buffer.indexOf(HEADER_END);
    if (end === -1) return;
    const head = this.#buffer.toString('latin1', 0, end);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const total = end + 4 + length;
    if (this.#buffer.length < total) return;
    const answer = {
      status: Number(head.slice(9, 12)),
      replayed: /\r\nidempotent-replayed: *true/i.test(head),
      body: this.#buffer.toString('utf8', end + 4, total),
    };
    this.#buffer = this.#buffer.subarray(total);
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.resolve(answer);
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(error);
  }
}

/** A create as the engine sends it (SPEC §15), serialised as one HTTP/1.1 request. */
export function createRequest(token: string, key: string, title: string): string {
  const body = JSON.stringify({ title, body: 'written by bench/server.ts' });
  const digest = createHash('sha256').update(body).digest('base64');
  return (
    'POST /api/notes HTTP/1.1\r\nhost: 127.0.0.1\r\n' +
    `authorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nidempotency-key: "${key}"\r\n` +
    `content-digest: sha-256=:${digest}:\r\n\r\n${body}`
  );
}

/**
 * A batch of `size` creates (SPEC §15.1), each item exactly the create {@link createRequest}
 * sends alone, as one HTTP/1.1 request.
 */
export function batchRequest(token: string, size: number, title: string): string {
  const items = Array.from({ length: size }, (_, i) => {
    const body = JSON.stringify({ title: `${title}.${i}`, body: 'written by bench/server.ts' });
    const digest = createHash('sha256').update(body).digest('base64');
    return {
      method: 'POST',
      path: '/api/notes',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': `"${newKey('bench')}"`,
        'content-digest': `sha-256=:${digest}:`,
      },
      body,
    };
  });
  const body = JSON.stringify({ items });
  return (
    'POST /sync/batch HTTP/1.1\r\nhost: 127.0.0.1\r\n' +
    `authorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** A fresh request id of the engine's shape (SPEC §9). */
export function newKey(prefix: string): string {
  return `${prefix}-${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

export interface LoadResult {
  writes: number;
  seconds: number;
  writesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  statuses: Record<string, number>;
}

/**
 * Runs `total` creates (or until `maxSeconds`) over `connections` concurrent keep-alive
 * connections, each with a fresh key; latency is measured per request.
 */
export async function runCreates(
  url: string,
  token: string,
  options: { total: number; connections: number; maxSeconds: number },
): Promise<LoadResult> {
  const sockets = await Promise.all(
    Array.from({ length: options.connections }, () => RawConnection.open(url)),
  );
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let issued = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.maxSeconds * 1000;

  async function worker(connection: RawConnection): Promise<void> {
    while (issued < options.total && performance.now() < deadline) {
      const request = createRequest(token, newKey('bench'), `note ${issued++}`);
      const t0 = performance.now();
      try {
        const answer = await connection.send(request);
        latencies.push(performance.now() - t0);
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      } catch {
        errors++;
        return;
      }
    }
  }

  await Promise.all(sockets.map(worker));
  const seconds = (performance.now() - started) / 1000;
  for (const socket of sockets) socket.close();
  latencies.sort((a, b) => a - b);
  const writes = statuses['201'] ?? 0;
  return {
    writes,
    seconds: round(seconds, 2),
    writesPerSecond: Math.round(writes / seconds),
    p50Ms: round(percentile(latencies, 0.5), 2),
    p99Ms: round(percentile(latencies, 0.99), 2),
    errors,
    statuses,
  };
}

/** What a run of batches did: items created per second, and the latency of whole batches. */
export interface BatchLoadResult {
  batchSize: number;
  batches: number;
  /** Items answered 201. */
  items: number;
  seconds: number;
  itemsPerSecond: number;
  /** Latency of one batch request. */
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** Batch-level statuses. */
  statuses: Record<string, number>;
  /** Item statuses. */
  itemStatuses: Record<string, number>;
}

/**
 * Sends batches of `size` creates, fresh keys each, over `connections` concurrent keep-alive
 * connections until `totalItems` items were sent or `maxSeconds` passed.
 */
export async function runBatches(
  url: string,
  token: string,
  options: { size: number; totalItems: number; connections: number; maxSeconds: number },
): Promise<BatchLoadResult> {
  const sockets = await Promise.all(
    Array.from({ length: options.connections }, () => RawConnection.open(url)),
  );
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const itemStatuses: Record<string, number> = {};
  let issued = 0;
  let batches = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.maxSeconds * 1000;

  async function worker(connection: RawConnection): Promise<void> {
    while (issued < options.totalItems && performance.now() < deadline) {
      const request = batchRequest(token, options.size, `batch ${batches++}`);
      issued += options.size;
      const t0 = performance.now();
      try {
        const answer = await connection.send(request);
        latencies.push(performance.now() - t0);
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (answer.status !== 200) continue;
        for (const item of (JSON.parse(answer.body) as { items: Array<{ status: number }> }).items)
          itemStatuses[item.status] = (itemStatuses[item.status] ?? 0) + 1;
      } catch {
        errors++;
        return;
      }
    }
  }

  await Promise.all(sockets.map(worker));
  const seconds = (performance.now() - started) / 1000;
  for (const socket of sockets) socket.close();
  latencies.sort((a, b) => a - b);
  const items = itemStatuses['201'] ?? 0;
  return {
    batchSize: options.size,
    batches: latencies.length,
    items,
    seconds: round(seconds, 2),
    itemsPerSecond: Math.round(items / seconds),
    p50Ms: round(percentile(latencies, 0.5), 2),
    p99Ms: round(percentile(latencies, 0.99), 2),
    errors,
    statuses,
    itemStatuses,
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
