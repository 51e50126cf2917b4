import http, { type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { HEADER, PROBLEM, type ProblemType } from 'sw-outbox/wire';
import {
  PROBLEM_CONTENT_TYPE_HEADER,
  type ProblemExtras,
  problemBody,
  rawProblemResponse,
} from './problem.ts';

/**
 * The Node HTTP server under the Fastify app. Node answers some requests itself, before any
 * Fastify code runs: a request it cannot parse, a header section over `maxHeaderSize`, an
 * `Expect` it does not know, HTTP/1.1 without `Host`, CONNECT, a request that does not arrive in
 * time.
 * Left alone those answers have no body or a body of Fastify's own shape; here each one is an
 * `application/problem+json` answer with a stable `type` (SPEC §15), and slow clients are bounded.
 */

/** Default time for a request's header section to arrive, from its first byte (slow headers). */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/**
 * Default time for a whole request, headers and body, to arrive. A 64 KiB body at 2 KiB/s still
 * makes it. Only receiving is timed: a handler may answer later (the "delay" fault does).
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** How long a socket that got a client-error answer may stay open for the client to read it. */
const CLIENT_ERROR_LINGER_MS = 1000;
/**
 * How long a closing connection keeps reading a request body that was never read (an answer
 * given before the body, such as 401 or 413) so that its answer reaches the client.
 */
const UNREAD_BODY_LINGER_MS = 2000;

/** Options of the Node server the app runs on: its timeouts. */
export interface HttpServerOptions {
  /** See {@link DEFAULT_HEADERS_TIMEOUT_MS}; at most `requestTimeoutMs`. */
  headersTimeoutMs: number;
  /** See {@link DEFAULT_REQUEST_TIMEOUT_MS}. */
  requestTimeoutMs: number;
  /** Idle time of a keep-alive connection between requests. */
  keepAliveTimeoutMs: number;
  /** Whether the app is closing: requests still arriving on open connections get 503. */
  isClosing(): boolean;
}

/** Fastify's `serverFactory`: an HTTP/1.1 server whose own answers are problems. */
export function createHttpServer(handler: RequestListener, options: HttpServerOptions) {
  if (!(options.headersTimeoutMs > 0 && options.requestTimeoutMs >= options.headersTimeoutMs)) {
    throw new RangeError('timeouts must satisfy 0 < headersTimeoutMs <= requestTimeoutMs');
  }
  const server = http.createServer(
    {
      // Node's own answer to a missing Host has no body; it is answered below instead.
      requireHostHeader: false,
      headersTimeout: options.headersTimeoutMs,
      requestTimeout: options.requestTimeoutMs,
      // Node looks for expired requests on this interval (30 s by default, which would let a
      // stalled request hold its connection well past its timeout).
      connectionsCheckingInterval: Math.min(1000, Math.max(25, options.headersTimeoutMs / 4)),
    },
    (request, response) => {
      lingerIfUnread(request, response);
      if (request.httpVersion === '1.1' && request.headers.host === undefined) {
        // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
        answer(response, 400, PROBLEM.badRequest, { detail: 'HTTP/1.1 requires a Host header' });
        return;
      }
      if (options.isClosing()) {
        response.setHeader(HEADER.retryAfter, '1');
        answer(response, 503, PROBLEM.unavailable, { detail: 'the server is shutting down' });
        return;
      }
      handler(request, response);
    },
  );
  server.keepAliveTimeout = options.keepAliveTimeoutMs;
  // With a listener Node no longer answers an unknown Expect with an empty 417 itself.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    lingerIfUnread(request, response);
    answer(response, 417, PROBLEM.expectationFailed, {
      detail: 'the only expectation supported is 100-continue',
    });
  });
  // Without a listener Node closes a CONNECT request's socket without a word.
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    // The socket is ours now, errors included: one without a listener would crash the process.
    socket.on('error', () => socket.destroy());
    socket.end(
      rawProblemResponse(405, PROBLEM.methodNotAllowed, { detail: 'this server is not a proxy' }),
    );
    setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  });
  return server;
}

/**
 * A "lingering close" (as Apache's): when a connection closes after an answer that was sent
 * before the request body was read, closing at once with the client's bytes still unread makes
 * the kernel reset the connection, and a reset can destroy the answer before the client reads
 * it. The client then sees a network error where it was told 401 or 413, and retries forever.
 * Instead the connection sends its answer and end of stream, then keeps reading (and dropping)
 * what the client still sends until the client closes or {@link UNREAD_BODY_LINGER_MS} pass.
 */
function lingerIfUnread(request: IncomingMessage, response: ServerResponse): void {
  // Runs before Node's own `finish` listener, which closes a connection that is not kept alive.
  response.prependOnceListener('finish', () => {
    const socket = request.socket;
    // A socket already gone (the kit stopped reading a body over its limit) has nothing to linger.
    if (request.complete || !socket) return;
    socket.destroySoon = () => {
      if (socket.writable) socket.end();
      const close = () => socket.destroy();
      socket.once('end', close);
      setTimeout(close, UNREAD_BODY_LINGER_MS).unref();
    };
  });
}

/** Sockets already answered: the parser keeps reporting errors for bytes that follow. */
const answered = new WeakSet<Socket>();

/**
 * Fastify's `clientErrorHandler` (Node's `clientError`): the request could not be parsed, was too
 * large, or did not arrive in time. Answers with a problem when nothing of a response has been
 * written on the socket yet, then closes the connection. Never echoes what the client sent.
 */
export function clientErrorHandler(
  options: Pick<HttpServerOptions, 'headersTimeoutMs' | 'requestTimeoutMs'>,
) {
  return function onClientError(error: NodeJS.ErrnoException, socket: Socket): void {
    if (answered.has(socket)) return;
    answered.add(socket);
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const [status, type, detail] = describeClientError(error.code, options);
    socket.end(rawProblemResponse(status, type, { detail }));
    // A client that neither reads nor closes must not keep the socket.
    setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  };
}

function describeClientError(
  code: string | undefined,
  options: Pick<HttpServerOptions, 'headersTimeoutMs' | 'requestTimeoutMs'>,
): [number, ProblemType, string] {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [
        408,
        PROBLEM.requestTimeout,
        `send the headers within ${options.headersTimeoutMs} ms and the whole request within ${options.requestTimeoutMs} ms`,
      ];
    case 'HPE_HEADER_OVERFLOW':
      return [
        431,
        PROBLEM.headersTooLarge,
        `the request line and headers may be at most ${http.maxHeaderSize} bytes`,
      ];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, PROBLEM.bodyTooLarge, 'the chunk extensions are too large'];
    default:
      return [400, PROBLEM.badRequest, 'the request is not valid HTTP/1.1'];
  }
}

/** A problem answer on a bare Node response, closing the connection (its body was not read). */
function answer(
  response: ServerResponse,
  status: number,
  type: ProblemType,
  extras: ProblemExtras,
): void {
  const body = JSON.stringify(problemBody(status, type, extras));
  response.writeHead(status, {
    'content-type': PROBLEM_CONTENT_TYPE_HEADER,
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.end(body);
}
