import type { Json } from '../model/json.ts';
import type { Outcome } from '../model/outcome.ts';
import type { TransportResult } from '../model/ports.ts';
import { PROBLEM } from '../model/problem-types.ts';

const TRANSIENT_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** The code of a row held because no credentials were there to send it with (never sent). */
export const NO_CREDENTIALS = 'auth_required';

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function parseBody(body: string): Json {
  if (body === '') return null;
  try {
    return JSON.parse(body) as Json;
  } catch {
    return body;
  }
}

function problemType(body: Json): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const type = body.type;
  if (typeof type !== 'string') return undefined;
  // Problem types may be URIs; the stable name is the last path segment.
  return type.slice(type.lastIndexOf('/') + 1);
}

function readRevision(body: Json, headers: Record<string, string>): number | null {
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const rev = body.currentRevision;
    if (typeof rev === 'number') return rev;
  }
  const etag = headers.etag?.replace(/^W\//, '').replaceAll('"', '');
  const fromTag = etag === undefined ? Number.NaN : Number(etag);
  return Number.isFinite(fromTag) ? fromTag : null;
}

function readRemote(body: Json, revision: number | null) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const current = body.current;
  if (current === undefined || current === null || revision === null) return undefined;
  return { revision, value: current };
}

/**
 * The `history` member of a conflict (§10.1): the version a resend would overwrite, named only
 * by a server that keeps it. Anything but a whole revision is no claim at all.
 */
function readHistory(body: Json): { revision: number } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const history = body.history;
  if (typeof history !== 'object' || history === null || Array.isArray(history)) return undefined;
  const revision = history.revision;
  return typeof revision === 'number' && Number.isSafeInteger(revision) && revision >= 0
    ? { revision }
    : undefined;
}

/** The default classifier: a transport result → an outcome (SPEC §11 table). */
export function classifyResult(result: TransportResult, now: number): Outcome {
  switch (result.kind) {
    case 'network_error':
      return { kind: 'transient', code: 'network' };
    case 'timeout':
      return { kind: 'transient', code: 'timeout' };
    case 'auth_unavailable':
      return { kind: 'auth', code: NO_CREDENTIALS };
    case 'refused':
      return { kind: 'permanent', code: result.code, detail: result.message };
    case 'not_sent':
      // Nothing left, so nothing was applied: a device-side retry, not an unknown outcome.
      return { kind: 'transient', code: result.code, device: true };
    case 'response':
      break;
  }
  const { status, headers } = result;
  const body = parseBody(result.body);
  if (status >= 200 && status < 300) {
    return { kind: 'success', status, body, replayed: headers['idempotent-replayed'] === 'true' };
  }
  const type = problemType(body);
  const retryAfterMs = parseRetryAfter(headers['retry-after'], now);
  const transient = (code: string): Outcome =>
    retryAfterMs === undefined
      ? { kind: 'transient', code }
      : { kind: 'transient', code, retryAfterMs };
  if (status === 409 && type === PROBLEM.inProgress) return transient('request_in_progress');
  if (status === 412 || (status === 409 && type === PROBLEM.revisionConflict)) {
    const currentRevision = readRevision(body, headers);
    const remote = readRemote(body, currentRevision);
    const history = readHistory(body);
    return {
      kind: 'conflict',
      status,
      currentRevision,
      ...(remote ? { remote } : {}),
      ...(history ? { history } : {}),
    };
  }
  if (TRANSIENT_STATUS.has(status)) return transient(`http_${status}`);
  if (status === 401) return { kind: 'auth', code: 'http_401' };
  if (status === 422 && type === PROBLEM.keyReused) {
    return { kind: 'permanent', code: 'fingerprint_mismatch', detail: result.body.slice(0, 2000) };
  }
  return { kind: 'permanent', code: `http_${status}`, detail: result.body.slice(0, 2000) };
}

/**
 * Whether an answer says the network itself is down (SPEC §12): no answer came back at all, or the
 * outcome of one that did not (`network`, `timeout`) was not a device-side reason. Every other row
 * would fail the same way, so the flush stops (`offline`) and a §12 trigger retries it later.
 * Takes a transport result (decided before the send slot passes on) or an outcome (decided as it
 * is counted, after the app's classifier had its say); their kinds never overlap.
 */
export function isNetworkDown(answer: TransportResult | Outcome): boolean {
  switch (answer.kind) {
    case 'network_error':
    case 'timeout':
      return true;
    case 'transient':
      return !answer.device && (answer.code === 'network' || answer.code === 'timeout');
    default:
      return false;
  }
}
