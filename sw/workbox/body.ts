/**
 * Request bodies as the outbox stores them: text. A row keeps its body as a string and resends
 * those bytes (SPEC §2, §9), so a body that is not UTF-8 text (a file upload, a binary protocol)
 * cannot become a `requests` row; the drop-in leaves such a request to the network, and such a
 * Workbox entry in its queue.
 */

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text, or undefined when they are not UTF-8 (or round-trip to other bytes). */
export function bodyText(
  bytes: ArrayBuffer | ArrayBufferView | undefined | null,
): string | null | undefined {
  if (bytes === undefined || bytes === null) return null;
  const view =
    bytes instanceof ArrayBuffer
      ? new Uint8Array(bytes)
      : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.byteLength === 0) return null;
  try {
    return decoder.decode(view);
  } catch {
    return undefined;
  }
}
