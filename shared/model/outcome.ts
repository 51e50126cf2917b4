import type { Json } from './json.ts';

/**
 * Outcomes of one attempt (SPEC §11), returned as values, never thrown. `retryAfterMs` carries
 * the server's `Retry-After`, which wins over computed backoff.
 */
export type Outcome =
  | { kind: 'success'; status: number; body: Json; replayed: boolean }
  | { kind: 'transient'; code: string; retryAfterMs?: number; device?: boolean }
  | { kind: 'auth'; code: string }
  | { kind: 'permanent'; code: string; detail?: string }
  | {
      kind: 'conflict';
      status: number;
      currentRevision: number | null;
      remote?: { revision: number; value: Json };
      /** The version a resend would overwrite, when the server keeps history (§10.1). */
      history?: { revision: number };
    };

/**
 * Whether a value a handler returned is an {@link Outcome} (SPEC §11): anything else is the
 * handler's failure, never read as one.
 */
export function isOutcome(value: unknown): value is Outcome {
  if (typeof value !== 'object' || value === null) return false;
  const o = value as Record<string, unknown>;
  switch (o.kind) {
    case 'success':
      return typeof o.status === 'number' && typeof o.replayed === 'boolean';
    case 'transient':
    case 'auth':
    case 'permanent':
      return typeof o.code === 'string';
    case 'conflict':
      return (
        typeof o.status === 'number' &&
        (o.currentRevision === null || typeof o.currentRevision === 'number')
      );
    default:
      return false;
  }
}
