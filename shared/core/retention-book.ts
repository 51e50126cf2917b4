import { HEADER, parseRetention } from '../model/headers.ts';
import type { Json } from '../model/json.ts';
import type { Logger } from '../model/ports.ts';
import type { OutboxStore } from '../model/store.ts';

/** The `meta` key the published retentions are kept under, so a restarted worker knows them. */
const RETENTION_META_KEY = 'retention';

/**
 * The retention each origin's server published (SPEC §15: `Idempotency-Retention` on every API
 * answer), kept in memory and in the store's `meta`: a worker that restarts after a week asleep
 * must know it before its first resend, not learn it from that resend's answer. Origins are as
 * `requestOrigin` names them (`''` for the sender's own).
 */
export interface RetentionBook {
  /**
   * Reads what `meta` kept, once (again after a failed read); a flush awaits it first. Undefined
   * once loaded: a flush then starts without yielding, exactly as it would without the book.
   */
  load(): Promise<void> | undefined;
  /** The retention last published by `origin`, in ms; undefined when none is known. */
  get(origin: string): number | undefined;
  /** Notes what an answer from `origin` published (its headers, lower-case names). */
  noteHeaders(origin: string, headers: Readonly<Record<string, string>>): void;
  /** Notes a retention learned another way (the receipt lookup's answer). */
  note(origin: string, retentionMs: number | undefined): void;
}

/** A {@link RetentionBook} over a store's `meta`. A failed write is only a warning. */
export function createRetentionBook(store: OutboxStore, logger?: Logger): RetentionBook {
  const known = new Map<string, number>();
  let loading: Promise<void> | undefined;
  let loaded = false;

  const load = () => {
    if (loaded) return undefined;
    loading ??= store.getMeta(RETENTION_META_KEY).then(
      (stored) => {
        loaded = true;
        if (!isRecord(stored)) return;
        // A damaged value is no retention (§15): unknown, the least a server keeps is assumed.
        for (const [origin, value] of Object.entries(stored))
          if (
            typeof value === 'number' &&
            Number.isFinite(value) &&
            value > 0 &&
            !known.has(origin)
          )
            known.set(origin, value);
      },
      (error: unknown) => {
        // Unknown is safe: the planner then assumes the least a server keeps (SPEC §15).
        loading = undefined;
        logger?.warn('retention read failed', { error: String(error) });
      },
    );
    return loading;
  };

  const note = (origin: string, retentionMs: number | undefined) => {
    if (retentionMs === undefined || known.get(origin) === retentionMs) return;
    known.set(origin, retentionMs);
    store
      .updateMeta(RETENTION_META_KEY, (current) => ({
        ...(isRecord(current) ? current : {}),
        [origin]: retentionMs,
      }))
      .catch((error: unknown) => logger?.warn('retention write failed', { error: String(error) }));
  };

  return {
    load,
    get: (origin) => known.get(origin),
    note,
    noteHeaders(origin, headers) {
      note(origin, parseRetention(headers[HEADER.retention]));
    },
  };
}

function isRecord(value: Json | undefined): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
