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
  if (request.body === null) return readItemBody({ ...item, body: null }, limit);
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) return tooLarge();

  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return tooLarge();
      }
      chunks.push(value);
    }
  } catch {
    return {
      ok: false,
      answer: problemAnswer(400, PROBLEM.badRequest, { detail: 'the body did not arrive' }),
    };
  }
  const bytes = Buffer.concat(chunks, size);
  if (size === 0 && contentType === null) return readItemBody({ ...item, body: null }, limit);
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    const answer = problemAnswer(400, PROBLEM.malformedBody, { detail: 'the body is not UTF-8' });
    return { ok: false, answer };
  }
  return readItemBody({ ...item, body: text }, limit);
}

function tooLarge(): ItemBody {
  return { ok: false, answer: problemAnswer(413, PROBLEM.bodyTooLarge) };
}
