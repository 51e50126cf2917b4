import { z } from 'zod';
import type { Json } from './json.ts';

/**
 * Row format v1 (SPEC §2). Every object schema is loose: a rewrite never drops a field it does
 * not know, so older and newer writers can share one outbox.
 */
const jsonValue: z.ZodType<Json> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number(),
    z.string(),
    z.array(jsonValue),
    z.record(z.string(), jsonValue),
  ]),
);

export const RowRequestSchema = z.looseObject({
  requestId: z.string(),
  fingerprint: z.string(),
  method: z.string(),
  url: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string().nullable(),
});

export const ClaimSchema = z.looseObject({
  holderId: z.string(),
  expiresAt: z.number(),
  fence: z.number().int().nonnegative(),
});

export const EvidenceSchema = z.looseObject({
  attemptCount: z.number().int().nonnegative(),
  lastAttemptAt: z.number().optional(),
  lastErrorCode: z.string().optional(),
});

export const WriterSchema = z.looseObject({ bundle: z.string(), at: z.number() });

/** The known row states; any other string is kept but never sent (shown as `unknown`). */
export const ROW_STATES = ['queued', 'sending', 'held', 'blocked'] as const;
export type KnownRowState = (typeof ROW_STATES)[number];

export const OutboxRowSchema = z.looseObject({
  v: z.literal(1).optional(),
  id: z.string().min(1),
  owner: z.string(),
  collection: z.string(),
  kind: z.string(),
  targetId: z.string(),
  savedAt: z.number(),
  state: z.string(),
  payload: jsonValue.optional(),
  baseRevision: z.number().nullable().optional(),
  request: RowRequestSchema.optional(),
  sentAt: z.number().optional(),
  deferredAt: z.number().optional(),
  nextAttemptAt: z.number().optional(),
  heldAt: z.number().optional(),
  blockedAt: z.number().optional(),
  blockedCode: z.string().optional(),
  blockedDetail: z.string().optional(),
  claim: ClaimSchema.optional(),
  successorOf: z.string().optional(),
  evidence: EvidenceSchema.optional(),
  writer: WriterSchema.optional(),
  conflict: z.looseObject({ version: z.number() }).optional(),
  meta: jsonValue.optional(),
});

export type RowRequest = z.infer<typeof RowRequestSchema>;
export type Claim = z.infer<typeof ClaimSchema>;
export type RowEvidence = z.infer<typeof EvidenceSchema>;
/** One outbox row as stored (v1; a v0 row lacks `v`). Unknown fields ride along untouched. */
export type OutboxRow = z.infer<typeof OutboxRowSchema>;

/** `pending:<create row id>`: the target of edits to a create that has no server id yet (§8). */
export const PENDING_PREFIX = 'pending:';

/** The create row id a pending target refers to, or undefined for a server id. */
export function pendingCreateId(targetId: string): string | undefined {
  return targetId.startsWith(PENDING_PREFIX) ? targetId.slice(PENDING_PREFIX.length) : undefined;
}

/** A stored value read back: parsed, or quarantine material when it failed to parse. */
export type DecodedRow =
  | { ok: true; row: OutboxRow; raw: unknown }
  | { ok: false; id: string; owner: string | undefined; raw: unknown; issues: string };

/** Parses a raw stored value. Never throws: a bad value comes back as `ok: false` (§2). */
export function decodeRow(raw: unknown): DecodedRow {
  const parsed = OutboxRowSchema.safeParse(raw);
  if (parsed.success) return { ok: true, row: parsed.data, raw };
  const record = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
  return {
    ok: false,
    id: typeof record.id === 'string' ? record.id : String(record.id),
    owner: typeof record.owner === 'string' ? record.owner : undefined,
    raw,
    issues: parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; '),
  };
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
