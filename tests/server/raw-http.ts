import { connect } from 'node:net';

/**
 * A minimal HTTP/1.1 client on `node:net` for requests no well-behaved client sends: no `Host`,
 * broken request lines, bytes that are not UTF-8, stalled headers or bodies. It writes exactly the
 * bytes it is given and reads the first final answer (1xx answers are skipped).
 */

/** What came back on the socket. */
export interface RawAnswer {
  /** The status of the first final answer; `undefined` when the socket ended without one. */
  status: number | undefined;
  /** Header names lower case; repeated headers joined with `, `. */
  headers: Record<string, string>;
  /** The body as UTF-8 (chunked bodies decoded). */
  body: string;
  /** Milliseconds from connecting to the complete answer, or to the end of the socket. */
  elapsedMs: number;
  /** `answered`: a complete answer was read; otherwise how the socket ended without one. */
  ending: 'answered' | 'closed' | 'reset' | 'timeout';
}

/** A piece of the request, written `atMs` after connecting (0 when omitted). */
export type RawChunk = string | Buffer | { atMs: number; data: string | Buffer };

export interface RawOptions {
  /** Give up after this long. Default 5 s. */
  timeoutMs?: number;
  /** The request is HEAD: its answer has no body whatever Content-Length says. */
  head?: boolean;
}

/** Sends `chunks` to `127.0.0.1:port` on a fresh connection and reads the answer. */
export function sendRaw(port: number, chunks: RawChunk[], options: RawOptions = {}) {
  return new Promise<RawAnswer>((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const timers: NodeJS.Timeout[] = [];
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (ending: RawAnswer['ending']) => {
      if (settled) return;
      // Only the end of the socket completes an answer framed by the end of the connection.
      const parsed = parseAnswer(received, options.head ?? false, ending !== 'answered');
      if (!parsed && ending === 'answered') return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      socket.destroy();
      resolve({
        status: parsed?.status,
        headers: parsed?.headers ?? {},
        body: parsed?.body ?? '',
        elapsedMs: Date.now() - started,
        ending: parsed ? 'answered' : ending,
      });
    };
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      finish('answered');
    });
    socket.on('end', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('error', () => finish('reset'));
    socket.on('connect', () => {
      for (const chunk of chunks) {
        const { atMs, data } =
          typeof chunk === 'string' || Buffer.isBuffer(chunk) ? { atMs: 0, data: chunk } : chunk;
        const write = () => {
          // A server that answered early may have closed; what is left is not sent.
          if (!socket.destroyed && socket.writable) socket.write(data, () => {});
        };
        if (atMs === 0) write();
        else timers.push(setTimeout(write, atMs));
      }
    });
    timers.push(setTimeout(() => finish('timeout'), options.timeoutMs ?? 5000));
  });
}

interface ParsedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The first final answer in `bytes`, or `undefined` while it is incomplete. An answer framed by
 * the end of the connection is complete only once the socket `ended`.
 */
function parseAnswer(bytes: Buffer, head: boolean, ended: boolean): ParsedAnswer | undefined {
  let offset = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', offset);
    if (end === -1) return undefined;
    const lines = bytes.subarray(offset, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
    if (!match) return undefined;
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const bodyStart = end + 4;
    if (status < 200) {
      offset = bodyStart;
      continue;
    }
    if (head || status === 204 || status === 304) return { status, headers, body: '' };
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const body = decodeChunked(bytes.subarray(bodyStart));
      return body === undefined ? undefined : { status, headers, body: body.toString('utf8') };
    }
    const length = headers['content-length'];
    if (length !== undefined) {
      const size = Number(length);
      if (bytes.length - bodyStart < size) return undefined;
      return {
        status,
        headers,
        body: bytes.subarray(bodyStart, bodyStart + size).toString('utf8'),
      };
    }
    return ended
      ? { status, headers, body: bytes.subarray(bodyStart).toString('utf8') }
      : undefined;
  }
}

function decodeChunked(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (bytes.length < start + size + 2) return undefined;
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
}
