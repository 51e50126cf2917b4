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
