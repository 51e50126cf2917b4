import type { Authenticate, DemoAuth } from './auth.ts';
import type { FaultInjector } from './faults.ts';
import type { RequestLog } from './request-log.ts';
import type { ServerStats } from './stats.ts';
import type { ServerStore } from './store/port.ts';

/** What the hooks and routes of one app share. Built once by `buildApp`. */
export interface AppContext {
  store: ServerStore;
  auth: DemoAuth;
  /** The app's own auth, when it plugs one in (replaces the demo's tokens and login). */
  authenticate?: Authenticate;
  /**
   * The token secret is public or weak (the demo default): only loopback peers may log in or
   * present tokens, so a deployment that forgot its secret cannot be entered from outside.
   */
  loopbackAuthOnly: boolean;
  faults: FaultInjector;
  stats: ServerStats;
  /** Keys held in progress by this process (the kit's). */
  inflight: { readonly size: number };
  now: () => number;
  /** Every `/api/` request, kept only with the admin routes on. */
  requests?: RequestLog;
  /** Send the server copy (`current`) with a 412 (SPEC §15 "optionally `current`"). */
  conflictIncludesCurrent: boolean;
  /** The `Link` header value advertising the batch endpoint; `undefined` without batches. */
  batchLink: string | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The batch route (SPEC §15.1): fault rules select it by its own route only. */
    batch?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated user; the ledger's principal (SPEC §15). Empty before auth. */
    principal: string;
    /** The parsed `Idempotency-Key` of a write. Empty before check 1. */
    idempotencyKey: string;
    /** `Content-Digest` of the raw body as received; `null` when there was no body. */
    bodyDigest: string | null;
    /** The fingerprint check 1 compared with the ledger, if it could (a declared digest). */
    comparedFingerprint: string | null;
  }
}
