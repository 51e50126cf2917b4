import { type Infer } from './schema-kit.ts';
/**
 * Row format v1 (SPEC §2). Every object schema is loose: a rewrite never drops a field it does
 * not know, so older and newer writers can share one outbox.
 */
export declare const RowRequestSchema: import('zod/mini').ZodMiniObject<
  {
    requestId: import('zod/mini').ZodMiniString<string>;
    fingerprint: import('zod/mini').ZodMiniString<string>;
    method: import('zod/mini').ZodMiniString<string>;
    url: import('zod/mini').ZodMiniString<string>;
    headers: import('zod/mini').ZodMiniCustom<Record<string, string>, Record<string, string>>;
    body: import('zod/mini').ZodMiniNullable<import('zod/mini').ZodMiniString<string>>;
  },
  import('zod/v4/core').$loose
>;
/** A row's claim: who sends it, until when, with which fence (§4). */
export declare const ClaimSchema: import('zod/mini').ZodMiniObject<
  {
    holderId: import('zod/mini').ZodMiniString<string>;
    expiresAt: import('zod/mini').ZodMiniNumber<number>;
    fence: import('zod/mini').ZodMiniNumber<number>;
  },
  import('zod/v4/core').$loose
>;
/** What a row's attempts left: how many, when the last was, and its error code. */
export declare const EvidenceSchema: import('zod/mini').ZodMiniObject<
  {
    attemptCount: import('zod/mini').ZodMiniNumber<number>;
    lastAttemptAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    lastErrorCode: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
  },
  import('zod/v4/core').$loose
>;
/** Which bundle last wrote the row, and when: marks a v1 writer (§4). */
export declare const WriterSchema: import('zod/mini').ZodMiniObject<
  {
    bundle: import('zod/mini').ZodMiniString<string>;
    at: import('zod/mini').ZodMiniNumber<number>;
  },
  import('zod/v4/core').$loose
>;
/** The known row states; any other string is kept but never sent (shown as `unknown`). */
export declare const ROW_STATES: readonly ['queued', 'sending', 'held', 'blocked'];
/** One of the row states this bundle knows. */
export type KnownRowState = (typeof ROW_STATES)[number];
/** The codec of one stored row (§2); loose at every level, so unknown fields survive a rewrite. */
export declare const OutboxRowSchema: import('zod/mini').ZodMiniObject<
  {
    v: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniLiteral<1>>;
    id: import('zod/mini').ZodMiniString<string>;
    owner: import('zod/mini').ZodMiniString<string>;
    collection: import('zod/mini').ZodMiniString<string>;
    kind: import('zod/mini').ZodMiniString<string>;
    targetId: import('zod/mini').ZodMiniString<string>;
    savedAt: import('zod/mini').ZodMiniNumber<number>;
    state: import('zod/mini').ZodMiniString<string>;
    payload: import('zod/mini').ZodMiniOptional<
      import('./schema-kit.ts').Schema<import('./json.ts').Json>
    >;
    baseRevision: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniNullable<import('zod/mini').ZodMiniNumber<number>>
    >;
    request: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniObject<
        {
          requestId: import('zod/mini').ZodMiniString<string>;
          fingerprint: import('zod/mini').ZodMiniString<string>;
          method: import('zod/mini').ZodMiniString<string>;
          url: import('zod/mini').ZodMiniString<string>;
          headers: import('zod/mini').ZodMiniCustom<Record<string, string>, Record<string, string>>;
          body: import('zod/mini').ZodMiniNullable<import('zod/mini').ZodMiniString<string>>;
        },
        import('zod/v4/core').$loose
      >
    >;
    sentAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    deferredAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    nextAttemptAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    heldAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    blockedAt: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniNumber<number>>;
    blockedCode: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
    blockedDetail: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
    claim: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniObject<
        {
          holderId: import('zod/mini').ZodMiniString<string>;
          expiresAt: import('zod/mini').ZodMiniNumber<number>;
          fence: import('zod/mini').ZodMiniNumber<number>;
        },
        import('zod/v4/core').$loose
      >
    >;
    successorOf: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
    evidence: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniObject<
        {
          attemptCount: import('zod/mini').ZodMiniNumber<number>;
          lastAttemptAt: import('zod/mini').ZodMiniOptional<
            import('zod/mini').ZodMiniNumber<number>
          >;
          lastErrorCode: import('zod/mini').ZodMiniOptional<
            import('zod/mini').ZodMiniString<string>
          >;
        },
        import('zod/v4/core').$loose
      >
    >;
    writer: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniObject<
        {
          bundle: import('zod/mini').ZodMiniString<string>;
          at: import('zod/mini').ZodMiniNumber<number>;
        },
        import('zod/v4/core').$loose
      >
    >;
    conflict: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniObject<
        {
          version: import('zod/mini').ZodMiniNumber<number>;
        },
        import('zod/v4/core').$loose
      >
    >;
    meta: import('zod/mini').ZodMiniOptional<
      import('./schema-kit.ts').Schema<import('./json.ts').Json>
    >;
  },
  import('zod/v4/core').$loose
>;
/** The exact request a row resends on every attempt (§9). */
export type RowRequest = Infer<typeof RowRequestSchema>;
/** A row's claim (§4). */
export type Claim = Infer<typeof ClaimSchema>;
/** A row's attempt evidence. */
export type RowEvidence = Infer<typeof EvidenceSchema>;
/** One outbox row as stored (v1; a v0 row lacks `v`). Unknown fields ride along untouched. */
export type OutboxRow = Infer<typeof OutboxRowSchema>;
/** A row as a planner observed it: decoded, with its raw stored value (for `expected`, §3). */
export interface Observed {
  row: OutboxRow;
  raw: unknown;
}
export { PENDING_PREFIX, pendingCreateId } from './pending.ts';
/** A stored value read back: parsed, or quarantine material when it failed to parse. */
export type DecodedRow =
  | {
      ok: true;
      row: OutboxRow;
      raw: unknown;
    }
  | {
      ok: false;
      id: string;
      owner: string | undefined;
      raw: unknown;
      issues: string;
    };
/**
 * Parses a raw stored value. Never throws: a bad value comes back as `ok: false` (§2), and so
 * does one the codec cannot even look at — cyclic or nested too deep in the fields it parses,
 * or a row the store could not read back — so that it is quarantined instead of stopping
 * whoever reads it (G7).
 */
export declare function decodeRow(raw: unknown): DecodedRow;
/** The display status of a row, derived and never stored (§2). */
export type RowStatus =
  | 'queued'
  | 'deferred'
  | 'sending'
  | 'waiting'
  | 'intent'
  | 'held'
  | 'blocked'
  | 'unknown';
/** Whether a row is an intent: an edit of a pending create that carries no request yet (§8). */
export declare function isIntentRow(row: OutboxRow): boolean;
