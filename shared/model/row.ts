import { inspectJson } from './json-bounds.ts';
import {
  count,
  type Infer,
  jsonValue,
  stringRecord,
  summarizeIssues,
  text,
  z,
} from './schema-kit.ts';
import { isUnreadable } from './store.ts';

/**
 * Row format v1 (SPEC §2). Every object schema is loose: a rewrite never drops a field it does
 * not know, so older and newer writers can share one outbox.
 */
const RowRequestSchema = z.looseObject({
  requestId: z.string(),
  fingerprint: z.string(),
  method: z.string(),
  url: z.string(),
  headers: stringRecord,
  body: z.nullable(z.string()),
  /** Where the key travels when not in `Idempotency-Key`; null: no key is sent (§22). */
  keyHeader: z.optional(z.nullable(z.string())),
});

/** A row's claim: who sends it, until when, with which fence (§4). */
const ClaimSchema = z.looseObject({
  holderId: z.string(),
  expiresAt: z.number(),
  fence: count,
});

/** What a row's attempts left: how many, when the last was, and its error code. */
const EvidenceSchema = z.looseObject({
  attemptCount: count,
  lastAttemptAt: z.optional(z.number()),
  lastErrorCode: z.optional(z.string()),
  /** Set once an attempt ended without an answer that rules out its effect (§6); kept for good. */
  mayHaveApplied: z.optional(z.boolean()),
  /**
   * When the row's current request first left in a way the server may have kept (its first claim
   * since every earlier attempt was answered "applied nothing"): how old its key is, against the
   * server's retention (§15). A new request (a conflict successor, a re-issue) starts anew.
   */
  firstAttemptAt: z.optional(z.number()),
});

/** Which bundle last wrote the row, and when: marks a v1 writer (§4). */
const WriterSchema = z.looseObject({ bundle: z.string(), at: z.number() });

/** The codec of one stored row (§2); loose at every level, so unknown fields survive a rewrite. */
export const OutboxRowSchema = z.looseObject({
  // decodeRow refuses any other version before the schema runs (an unknown version is kept).
  v: z.optional(z.custom<1>((value) => value === 1)),
  id: text(1),
  owner: z.string(),
  collection: z.string(),
  kind: z.string(),
  targetId: z.string(),
  savedAt: z.number(),
  /**
   * The row's place in its owner's commit order (§6.1), assigned by the store; absent on rows of
   * legacy v0 tabs and older bundles, whose place is not known.
   */
  seq: z.optional(
    z.custom<number>((value) => Number.isSafeInteger(value) && (value as number) > 0, {
      error: 'expected a positive integer',
    }),
  ),
  state: z.string(),
  payload: z.optional(jsonValue),
  baseRevision: z.optional(z.nullable(z.number())),
  request: z.optional(RowRequestSchema),
  sentAt: z.optional(z.number()),
  deferredAt: z.optional(z.number()),
  nextAttemptAt: z.optional(z.number()),
  heldAt: z.optional(z.number()),
  blockedAt: z.optional(z.number()),
  blockedCode: z.optional(z.string()),
  blockedDetail: z.optional(z.string()),
  claim: z.optional(ClaimSchema),
  successorOf: z.optional(z.string()),
  /**
   * Set on a blocked row by the success ACK of a newer edit of its record (that edit's request
   * id): the row is never merged into a later edit, its older fields would land over the newer
   * one (§6, G4). A retry that queues the row again clears it; one that cannot (§13) keeps it.
   */
  overtakenBy: z.optional(z.string()),
  evidence: z.optional(EvidenceSchema),
  writer: z.optional(WriterSchema),
  conflict: z.optional(z.looseObject({ version: z.number() })),
  meta: z.optional(jsonValue),
});

/** The exact request a row resends on every attempt (§9). */
export type RowRequest = Infer<typeof RowRequestSchema>;
/** A row's claim (§4). */
export type Claim = Infer<typeof ClaimSchema>;
/** One outbox row as stored (v1; a v0 row lacks `v`). Unknown fields ride along untouched. */
export type OutboxRow = Infer<typeof OutboxRowSchema>;

/** A row as a planner observed it: decoded, with its raw stored value (for `expected`, §3). */
export interface Observed {
  row: OutboxRow;
  raw: unknown;
}

import { pendingCreateId } from './pending.ts';

export { PENDING_PREFIX, pendingCreateId } from './pending.ts';

/** A stored value read back: parsed, or quarantine material when it failed to parse. */
export type DecodedRow =
  | { ok: true; row: OutboxRow; raw: unknown }
  | {
      ok: false;
      /** The row's id as a string: the id its quarantine row takes. */
      id: string;
      /** The key the value is stored under, as it is (a corrupt value's id may be a number). */
      key: unknown;
      owner: string | undefined;
      raw: unknown;
      issues: string;
      /**
       * Set when the value names a format version this bundle does not know (§17): it is not
       * corrupt, a newer bundle wrote it — left alone, never quarantined.
       */
      unknownVersion?: true;
    };

/**
 * Whether `v` names a format newer than this bundle's (§17): only a whole number above 1. Any
 * other `v` — a string, a fraction, a negative, garbage — is a corrupt value, quarantined with
 * its raw value so the app can see it and discard it.
 */
function isNewerFormat(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 1;
}

/** A `v` as a short phrase for the quarantine's reason (never the whole of a huge value). */
function describeVersion(v: unknown): string {
  if (typeof v === 'string') return `the string ${JSON.stringify(v.slice(0, 40))}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  return v === null ? 'null' : `a value of type ${typeof v}`;
}

/** The fields the codec parses all the way down: checked for cycles and depth first. */
const JSON_FIELDS = ['payload', 'meta'] as const;

/**
 * The string a value stored under a key that is not a string is known by once quarantined (§2):
 * one name per key value — a number as it is written, a Date to the millisecond, binary in hex, an
 * array of those with its strings quoted — so two keys of a kind never share a name (`String` would give two Dates of one second, or the
 * array `[1,2]` and the string `"1,2"`, the same one).
 */
export function keyName(key: unknown): string {
  const part = (k: unknown): string => {
    if (typeof k === 'string') return JSON.stringify(k);
    if (typeof k === 'number') return String(k);
    if (k instanceof Date)
      return Number.isNaN(k.getTime()) ? 'date:invalid' : `date:${k.toISOString()}`;
    if (k instanceof ArrayBuffer || ArrayBuffer.isView(k)) {
      const bytes =
        k instanceof ArrayBuffer
          ? new Uint8Array(k)
          : new Uint8Array(k.buffer, k.byteOffset, k.byteLength);
      return `binary:${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
    }
    if (Array.isArray(k)) return `[${k.map(part).join(',')}]`;
    return String(k);
  };
  return part(key);
}

/**
 * Parses a raw stored value. Never throws: a bad value comes back as `ok: false` (§2), and so
 * does one the codec cannot even look at — cyclic or nested too deep in the fields it parses,
 * or a row the store could not read back — so that it is quarantined instead of stopping
 * whoever reads it (G7).
 */
export function decodeRow(raw: unknown): DecodedRow {
  const record = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  const bad = (issues: string): DecodedRow => ({
    ok: false,
    id: typeof record.id === 'string' ? record.id : keyName(record.id),
    key: record.id,
    owner: typeof record.owner === 'string' ? record.owner : undefined,
    raw,
    issues,
  });
  if (isUnreadable(raw))
    return bad('(root): unreadable: the browser could not read this stored value back');
  if (record.v !== undefined && record.v !== 1 && !isNewerFormat(record.v))
    return bad(`v: ${describeVersion(record.v)} is not a format version`);
  if (isNewerFormat(record.v)) {
    return {
      ...(bad(`v: format version ${String(record.v)} is not known to this bundle`) as Extract<
        DecodedRow,
        { ok: false }
      >),
      unknownVersion: true,
    };
  }
  for (const field of JSON_FIELDS) {
    const problem =
      record[field] === undefined ? undefined : inspectJson(record[field], { path: field });
    if (problem) return bad(`${problem.path}: ${problem.code}: ${problem.message}`);
  }
  let parsed: ReturnType<typeof OutboxRowSchema.safeParse>;
  try {
    parsed = OutboxRowSchema.safeParse(raw);
  } catch (error) {
    return bad(
      `(root): the codec failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (parsed.success) return { ok: true, row: parsed.data, raw };
  return bad(
    summarizeIssues(parsed.error.issues)
      .map((issue) => `${issue.path}: ${issue.message}`)
      .join('; '),
  );
}

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
export function isIntentRow(row: OutboxRow): boolean {
  return (
    row.request === undefined &&
    pendingCreateId(row.targetId) !== undefined &&
    row.kind !== 'create'
  );
}
