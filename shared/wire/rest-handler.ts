import type {
  BatchOption,
  CollectionHandler,
  ConflictPolicy,
  IntentInfo,
  PreparedRequest,
  ReceiptFacts,
} from '../model/handler.ts';
import { formatRevisionTag, HEADER } from '../model/headers.ts';
import type { HistoryRef } from '../model/history.ts';
import type { Json } from '../model/json.ts';
import { isPlainObject } from '../model/json-bounds.ts';
import { pendingCreateId } from '../model/pending.ts';

/** Options of {@link restHandler}. */
export interface RestHandlerOptions {
  /** Collection URL, e.g. `/api/notes` or `https://api.example.com/notes`. */
  baseUrl: string;
  /** Conflict policy (SPEC §10); `rebase` by default. */
  conflict?: ConflictPolicy;
  /** Method for updates; `PATCH` by default. */
  updateMethod?: string;
  /**
   * Batches (SPEC §15.1): the endpoint and its limits, or `false` to send every row alone.
   * Unset: the endpoint the server advertises with a `Link` header, if it does.
   */
  batch?: false | BatchOption;
}

/**
 * A handler for the wire protocol of SPEC §15: `POST base` creates, `PATCH base/:id` with
 * `If-Match` updates, `DELETE base/:id` with `If-Match` deletes. Pure; used by the worker and the
 * page sender alike.
 */
export function restHandler(options: RestHandlerOptions): CollectionHandler {
  const base = options.baseUrl.replace(/\/+$/, '');
  const itemUrl = (targetId: string) => `${base}/${encodeURIComponent(targetId)}`;
  const ifMatch = (revision: number | null | undefined): Record<string, string> =>
    revision === null || revision === undefined
      ? {}
      : { [HEADER.ifMatch]: formatRevisionTag(revision) };

  return {
    // Unset, they are the engine's: its `conflict` (default `rebase`), the advertised endpoint.
    conflict: options.conflict,
    batch: options.batch,
    // Every update and delete goes with `If-Match`: one without a revision is refused at enqueue.
    requiresRevision: true,
    toRequest(intent: IntentInfo): PreparedRequest {
      const body = intent.payload === undefined ? null : JSON.stringify(intent.payload);
      const json: Record<string, string> =
        body === null ? {} : { 'content-type': 'application/json' };
      switch (intent.kind) {
        case 'create':
          return { method: 'POST', url: base, headers: json, body: body ?? '{}' };
        case 'delete':
          return {
            method: 'DELETE',
            url: itemUrl(intent.targetId),
            headers: ifMatch(intent.baseRevision),
            body: null,
          };
        default:
          if (pendingCreateId(intent.targetId) !== undefined) {
            throw new Error(
              `restHandler cannot address ${intent.targetId}: it has no server id yet`,
            );
          }
          return {
            method: options.updateMethod ?? 'PATCH',
            url: itemUrl(intent.targetId),
            headers: { ...json, ...ifMatch(intent.baseRevision) },
            body,
          };
      }
    },
    // The reference server's history route (SPEC §10.1): `<base>/<id>/history/<revision>`.
    historyUrl(ref: HistoryRef): string {
      return `${itemUrl(ref.recordId)}/history/${ref.supersededRevision}`;
    },
    readReceipt(body: Json): ReceiptFacts {
      if (!isPlainObject(body)) return {};
      const facts: ReceiptFacts = {};
      if (typeof body.id === 'string' || typeof body.id === 'number')
        facts.serverId = String(body.id);
      if (typeof body.revision === 'number') facts.revision = body.revision;
      return facts;
    },
  };
}
