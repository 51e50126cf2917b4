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

/** The methods the Fetch API sends upper-cased whatever their case (Fetch, "normalize a method"). */
const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);

/**
 * A method as `fetch` sends it: DELETE, GET, HEAD, OPTIONS, POST and PUT in any case upper-cased,
 * any other as given (methods are case-sensitive, RFC 9110 §9.1). A batch item carries its
 * method this way, and the server reads it this way, as its request alone arrives (SPEC §15.1).
 */
export function fetchMethod(method: string): string {
  const upper = method.toUpperCase();
  return NORMALIZED_METHODS.has(upper) ? upper : method;
}
