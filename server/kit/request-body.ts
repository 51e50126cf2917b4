import { PROBLEM } from 'sw-outbox/wire';
import { type ItemBody, readItemBody } from '../item-body.ts';
import { problemAnswer } from '../problem.ts';

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Reads a write's body from a Fetch API request, after check 1 (SPEC §15: a replay is answered
 * before the body is read): at most `limit` bytes (413 beyond, without reading further when
 * `Content-Length` says so), UTF-8 (400 otherwise, rather than replacing bytes with U+FFFD, so
 * what is stored is what the client meant), then judged exactly as a batch item's body
 * (`readItemBody`: 415 for a media type other than JSON, 400 for text that is not JSON). The
 * digest is over the bytes as received.
 */
export async function readRequestBody(request: Request, limit: number): Promise<ItemBody> {
  const headers: Record<string, string> = {};
  const contentType = request.headers.get('content-type');
  if (contentType !== null) headers['content-type'] = contentType;
  const item = { method: request.method, path: '', headers };
  // Before `request.body`, which would make the web stream this avoids.
  const direct = NODE_BODIES.get(request)?.();
  const body = direct === undefined ? request.body : undefined;
  if (body === null) return readItemBody({ ...item, body: null }, limit);
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) return tooLarge();

  const read = await (body === undefined ? readAtMost(direct!, limit) : readWebAtMost(body, limit));
  if (read === 'too-large') return tooLarge();
  if (read === 'broken') {
    return {
      ok: false,
      answer: problemAnswer(400, PROBLEM.badRequest, { detail: 'the body did not arrive' }),
    };
  }
  const { bytes } = read;
  if (bytes.length === 0 && contentType === null)
    return readItemBody({ ...item, body: null }, limit);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    const answer = problemAnswer(400, PROBLEM.malformedBody, { detail: 'the body is not UTF-8' });
    return { ok: false, answer };
  }
  return readItemBody({ ...item, body: text }, limit);
}

/**
 * The Node request behind a `Request` the Node adapters made (node-http.ts), while its body can
 * be read from it directly: the same bytes without a web stream per write. `undefined` once a
 * web stream was made over it (a hook asked for the body), which is then read instead.
 */
const NODE_BODIES = new WeakMap<Request, () => AsyncIterable<Uint8Array> | undefined>();

/** Names where a `Request`'s body can be read without its web stream, for {@link readRequestBody}. */
export function readBodyFromNode(
  request: Request,
  body: () => AsyncIterable<Uint8Array> | undefined,
): void {
  NODE_BODIES.set(request, body);
}

/** Up to `limit` bytes of a body; past it the rest is not read (the stream is cancelled). */
async function readAtMost(
  chunks: AsyncIterable<Uint8Array>,
  limit: number,
): Promise<{ bytes: Buffer } | 'too-large' | 'broken'> {
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of chunks) {
      size += chunk.byteLength;
      // Leaving the loop returns the iterator: the rest is cancelled, not read.
      if (size > limit) return 'too-large';
      parts.push(chunk);
    }
  } catch {
    return 'broken';
  }
  return { bytes: Buffer.concat(parts, size) };
}

/** {@link readAtMost} for a web stream. */
async function readWebAtMost(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<{ bytes: Buffer } | 'too-large' | 'broken'> {
  const parts: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return 'too-large';
      }
      parts.push(value);
    }
  } catch {
    return 'broken';
  }
  return { bytes: Buffer.concat(parts, size) };
}

function tooLarge(): ItemBody {
  return { ok: false, answer: problemAnswer(413, PROBLEM.bodyTooLarge) };
}
