import type { IncomingMessage, ServerResponse } from 'node:http';
import { PROBLEM } from 'sw-outbox/wire';
import { type Answer, PROBLEM_CONTENT_TYPE_HEADER, problemBody } from '../problem.ts';
import type { OutboxKit } from './outbox-kit.ts';
import { readBodyFromNode } from './request-body.ts';
import { targetUrl } from './request-target.ts';

/**
 * Node's `http` request and response as the Fetch API's, for the adapters that sit on Node's
 * server (Express, Fastify, a plain `http.createServer`). The body stays a stream until the kit
 * reads it, so check 1 still answers a replay before the body is read (SPEC §15).
 */

/**
 * A Fetch API `Request` for a Node request whose body has not been read yet. `undefined` when
 * the request cannot be one (a header value `Headers` refuses): answer 400.
 */
export function toFetchRequest(
  request: IncomingMessage,
  target = request.url ?? '/',
): Request | undefined {
  return fetchRequestOf(request, target, false);
}

/**
 * {@link toFetchRequest}, with `lazy` the adapters' own: a `Request` whose body stream is made
 * only when something asks for it (see {@link NodeBodyRequest}).
 */
function fetchRequestOf(
  request: IncomingMessage,
  target: string,
  lazy: boolean,
): Request | undefined {
  const headers = new Headers();
  const raw = request.rawHeaders;
  try {
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  } catch {
    return undefined;
  }
  const url =
    targetUrl(target, `http://${request.headers.host ?? 'localhost'}`) ??
    targetUrl(target, 'http://localhost');
  if (url === undefined) return undefined;
  const method = request.method ?? 'GET';
  const hasBody =
    method !== 'GET' &&
    method !== 'HEAD' &&
    (request.headers['transfer-encoding'] !== undefined ||
      (request.headers['content-length'] !== undefined &&
        request.headers['content-length'] !== '0'));
  if (FORBIDDEN_METHODS.has(method.toUpperCase())) return undefined;
  try {
    if (hasBody && lazy) return new NodeBodyRequest(url, { method, headers }, request);
    return new Request(url, {
      method,
      headers,
      body: hasBody ? lazyBody(request) : null,
      // Node's fetch requires this for a streamed body.
      duplex: 'half',
    } as RequestInit);
  } catch {
    return undefined;
  }
}

/**
 * The `Request` the Node adapters hand the kit. A web stream over the Node request is dear to make
 * (on Node 20 the dearest thing the adapters made per write) and the kit reads the Node stream
 * itself (request-body.ts), so the stream is made only when a hook asks for the body: `body`,
 * `bodyUsed`, the body's readers and `clone()` behave as a `Request` made with it. Only a copy
 * made with `new Request(request)` before that sees no body.
 */
class NodeBodyRequest extends Request {
  readonly #message: IncomingMessage;
  #withBody: Request | undefined;

  constructor(url: URL, init: { method: string; headers: Headers }, message: IncomingMessage) {
    super(url, init);
    this.#message = message;
    // Read directly only while no web stream was made: once one was, it may be read or teed.
    readBodyFromNode(this, () => (this.#withBody ? undefined : message));
  }

  override get body(): Request['body'] {
    return this.withBody().body;
  }

  override get bodyUsed(): boolean {
    return this.#withBody?.bodyUsed ?? false;
  }

  /** This request with its body as a web stream, made once. */
  withBody(): Request {
    this.#withBody ??= new Request(this.url, {
      method: this.method,
      headers: this.headers,
      body: lazyBody(this.#message),
      duplex: 'half',
    } as RequestInit);
    return this.#withBody;
  }
}

// The body's readers and `clone()`, over the request made with its stream (`bytes()` where this
// Node's `Request` has it).
for (const name of ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text', 'clone']) {
  if (!(name in Request.prototype)) continue;
  Object.defineProperty(NodeBodyRequest.prototype, name, {
    value(this: NodeBodyRequest) {
      const full = this.withBody() as unknown as Record<string, () => unknown>;
      return full[name]!.call(full);
    },
    writable: true,
    configurable: true,
  });
}

/**
 * The request's body as a web stream that touches the Node stream only when read: a request the
 * kit leaves to the app (`express.json()` after the kit's middleware) keeps its body unread.
 */
function lazyBody(request: IncomingMessage): ReadableStream<Uint8Array> {
  let chunks: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= request[Symbol.asyncIterator]();
        const { done, value } = await chunks.next();
        if (done) controller.close();
        else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
      },
      async cancel() {
        await chunks?.return?.();
      },
    },
    // Nothing is pulled before a reader asks.
    { highWaterMark: 0 },
  );
}

/** Methods the Fetch API refuses to make a `Request` of; never a write of the kit's. */
const FORBIDDEN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * Writes a Fetch API `Response` on a Node response; a `Response.error()` (an answer a hook chose
 * to lose) destroys the connection instead, as a network that lost the answer would.
 */
export async function sendFetchResponse(response: Response, target: ServerResponse): Promise<void> {
  if (response.type === 'error') {
    target.socket?.destroy();
    target.destroy();
    return;
  }
  const body = Buffer.from(await response.arrayBuffer());
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  if (response.status !== 204 && response.status !== 304) {
    headers['content-length'] = String(body.length);
  }
  target.writeHead(response.status, headers);
  target.end(body);
}

/**
 * Writes the kit's answer on a Node response as `kit.answer` gives it (status, lower-case headers,
 * body text), with no Fetch API `Response` to build and take apart again per write; `'drop'` (an
 * answer a hook chose to lose) destroys the connection instead. As a `Response` would, it sends
 * no body for 204, 205 and 304.
 */
export function sendAnswer(answer: Answer | 'drop', target: ServerResponse): void {
  if (answer === 'drop') {
    target.socket?.destroy();
    target.destroy();
    return;
  }
  const { status, headers } = answer;
  const empty = status === 204 || status === 205 || status === 304;
  const body = empty ? '' : answer.body;
  try {
    target.writeHead(
      status,
      empty ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    );
  } catch {
    // A header value HTTP cannot carry (from a hook): 500, as a `Response` refusing it was.
    const problem = JSON.stringify(problemBody(500, PROBLEM.internal));
    target.writeHead(500, { 'content-type': PROBLEM_CONTENT_TYPE_HEADER });
    target.end(problem);
    return;
  }
  target.end(body);
}

/**
 * The answer to a Node request that is no Fetch API request: 405 for a method the Fetch API
 * refuses (`TRACE`, `CONNECT`), 400 for headers it cannot hold.
 */
function sendUnreadable(request: IncomingMessage, target: ServerResponse): void {
  const forbidden = FORBIDDEN_METHODS.has((request.method ?? '').toUpperCase());
  const body = JSON.stringify(
    forbidden
      ? problemBody(405, PROBLEM.methodNotAllowed)
      : problemBody(400, PROBLEM.badRequest, { detail: 'the request headers cannot be read' }),
  );
  target.writeHead(forbidden ? 405 : 400, { 'content-type': PROBLEM_CONTENT_TYPE_HEADER });
  target.end(body);
}

/**
 * Hands a Node request to the kit: `true` when the kit answered it, `false` when it is not the
 * kit's (the body is then unread, for the app). `target` is the path and query as the client
 * sent them, when a router has rewritten `request.url`.
 */
export async function handleNodeRequest<Tx>(
  kit: OutboxKit<Tx>,
  request: IncomingMessage,
  response: ServerResponse,
  target?: string,
): Promise<boolean> {
  const fetchRequest = fetchRequestOf(request, target ?? request.url ?? '/', true);
  if (!fetchRequest) {
    // A method the Fetch API refuses is not a write: the app's to answer.
    if (FORBIDDEN_METHODS.has((request.method ?? '').toUpperCase())) return false;
    sendUnreadable(request, response);
    return true;
  }
  const answer = await kit.answer(fetchRequest);
  if (!answer) return false;
  sendAnswer(answer, response);
  return true;
}

/**
 * A `node:http` request listener that serves the kit alone (404 for anything else): the
 * smallest server, and how tests run a kit app in several processes.
 */
export function kitRequestListener<Tx>(kit: OutboxKit<Tx>) {
  return (request: IncomingMessage, response: ServerResponse): void => {
    const fetchRequest = fetchRequestOf(request, request.url ?? '/', true);
    if (!fetchRequest) {
      sendUnreadable(request, response);
      return;
    }
    kit
      .answer(fetchRequest)
      .then(
        async (answer) => {
          // Not the kit's: its 404, with the headers every answer of the kit carries.
          if (answer) sendAnswer(answer, response);
          else await sendFetchResponse(await kit.fetch(fetchRequest), response);
        },
        () => response.destroy(),
      )
      .catch(() => response.destroy());
  };
}
