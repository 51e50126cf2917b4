const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Whether an HTTP/1.1 request can carry this header (RFC 9110 §5.1, §5.5): a token for a name;
 * visible characters, spaces, tabs and obs-text for a value. JavaScript strings can hold more —
 * NUL, CR, LF, characters past U+00FF — which `fetch` refuses to send and a server's parser
 * refuses to read.
 */
export function isSendableHeader(name: string, value: string): boolean {
  return isHeaderName(name) && HEADER_VALUE.test(value);
}

/** Whether `name` is a header name (an RFC 9110 token). */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}
