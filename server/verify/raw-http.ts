import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

/**
 * The two requests `fetch` cannot make, for the verifier: a request whose body never arrives
 * (check 1 must answer a replay from the head alone) and a request whose connection is dropped
 * right after it was sent (the answer is lost; the retry must be answered from the ledger).
 */

/** What came back on a raw connection. */
export interface RawReply {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
}

function open(url: URL): Socket {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return url.protocol === 'https:'
    ? connectTls({ host: url.hostname, port, servername: url.hostname })
    : connectTcp({ host: url.hostname, port });
}

function head(
  url: URL,
  method: string,
  path: string,
  headers: Record<string, string>,
  length: number,
): string {
  // Under the base path of `baseUrl`, as the verifier's `fetch` requests are.
  const target = `${url.pathname.replace(/\/$/, '')}${path}`;
  let text = `${method} ${target} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  return `${text}Content-Length: ${length}\r\n\r\n`;
}

/**
 * Sends the head of a request announcing `length` body bytes and never the body; resolves with
 * the answer, or `undefined` when none came within `timeoutMs` (the server waits for the body).
 */
export function sendHeadOnly(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  length: number,
  timeoutMs: number,
): Promise<RawReply | undefined> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = open(url);
    let received = Buffer.alloc(0);
    const finish = (reply: RawReply | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(reply);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on('error', () => finish(undefined));
    socket.write(head(url, method, path, headers, length));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const reply = parseReply(received);
      if (reply) finish(reply);
    });
  });
}

/** Sends a whole request and destroys the connection as soon as it is written. */
export function sendAndDrop(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<void> {
  const url = new URL(base);
  return new Promise((resolve) => {
    const socket = open(url);
    socket.on('error', () => resolve());
    const bytes = Buffer.from(body);
    socket.write(head(url, method, path, headers, bytes.length));
    socket.write(bytes, () => {
      socket.destroy();
      resolve();
    });
  });
}

/** A complete answer in `bytes` (status line, headers, a `Content-Length` body), if there is one. */
function parseReply(bytes: Buffer): RawReply | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = bytes.subarray(end + 4);
  if (body.length < length) return undefined;
  return { status, headers, body: body.subarray(0, length).toString('utf8') };
}
