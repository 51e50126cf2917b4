import { traitsOf } from '../model/error-codes.ts';
import type { OutboxRow } from '../model/row.ts';

/**
 * SPEC §12 "Recovery pulls the queue forward": rows deferred because the network itself failed
 * wait on their own backoff; once a request to their origin succeeds again they are due at once,
 * so a queue drains within about a round trip of the network coming back instead of one backoff
 * tick at a time. A server that asked for time (`Retry-After`, 429, 503) is never overridden:
 * those rows carry the server's status code, not a network failure. Which codes mean "no server
 * answered" (the network failed, the attempt timed out, or the row was claimed and put back
 * unsent) is the `unanswered` trait of the code table.
 */

/**
 * The origin a request goes to: the origin of an absolute URL, or `''` for a relative one (the
 * sender's own origin — relative URLs are resolved against it, so they share it).
 */
export function requestOrigin(url: string): string {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) return '';
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** Whether a row waiting on backoff is due now because its origin answered again. */
export function isPulledForward(row: OutboxRow, recovered: ReadonlySet<string>): boolean {
  return (
    recovered.size > 0 &&
    row.request !== undefined &&
    traitsOf(row.evidence?.lastErrorCode ?? '')?.unanswered === true &&
    recovered.has(requestOrigin(row.request.url))
  );
}
