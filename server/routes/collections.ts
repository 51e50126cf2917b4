import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { formatRevisionTag, HEADER, PROBLEM } from 'sw-outbox/wire';
import type { AppContext } from '../context.ts';
import { storedAnswer } from '../idempotency.ts';
import { invalid, type Validation, valid } from '../kit/answers.ts';
import type { KitWrite, WriteInput } from '../kit/write-route.ts';
import { type Answer, problemAnswer, sendAnswer, sendProblem } from '../problem.ts';
import {
  type DocumentIntent,
  type DocumentRecord,
  documentJson,
  isObject,
} from '../store/documents.ts';
import { requireRevision } from '../write.ts';
import type { StoreRoute } from './notes.ts';

/**
 * Schemaless JSON collections (`--collection todos`, repeatable): `/api/<name>` takes any JSON
 * object as a record, beside the demo's strict `notes`, so an app can prototype against the
 * reference server without a schema. Writes are the kit's routes, with the same three checks,
 * batches, faults and counters as the notes':
 *
 * - `POST /api/<name>` — any JSON object (not `id` or `revision`, which the server owns) → 201
 *   `{ id, revision: 1, …fields }`, `ETag: "1"`
 * - `PATCH /api/<name>/:id` with `If-Match` — an RFC 7396 merge patch (members replace, `null`
 *   removes, objects merge) → 200 `{ id, revision, …fields }`
 * - `DELETE /api/<name>/:id` with `If-Match` → 200 `{ id, revision, deleted: true }`
 * - `GET /api/<name>` → `{ items: [ … ] }` (the caller's live records, oldest first, at most
 *   1000) and `GET /api/<name>/:id` → the record with its `ETag`
 *
 * A stale `If-Match` is 412 `revision-conflict` with `currentRevision` and the server copy; these
 * collections keep no history (no `history` member). Bodies are bounded by the body limit (413),
 * nesting by {@link MAX_DEPTH} (422).
 */

/** The names a collection may have: lower case, as a path segment and an id prefix. */
export const COLLECTION_NAME = /^[a-z][a-z0-9_-]{0,39}$/;
/** Names the server uses itself. */
const RESERVED = new Set(['notes']);
/** Record ids, as the engine makes them (SPEC §9) or the server does. */
const RECORD_ID = /^[A-Za-z0-9_-]{1,80}$/;
/** Deepest nesting of a record's JSON. */
export const MAX_DEPTH = 32;
/** At most this many records are listed. */
const LIST_LIMIT = 1000;

/** Why `name` cannot be a collection, or `undefined` when it can. */
export function collectionNameProblem(name: string): string | undefined {
  if (!COLLECTION_NAME.test(name)) {
    return `a collection name is lower-case letters, digits, "_" and "-", starting with a letter (at most 40): ${JSON.stringify(name)}`;
  }
  if (RESERVED.has(name)) return `"${name}" is the demo's own collection`;
  return undefined;
}

/** The write routes of one collection, for the kit. */
export function collectionWriteRoutes(
  ctx: AppContext,
  name: string,
): Array<StoreRoute<DocumentIntent>> {
  const handle = (write: KitWrite<unknown, DocumentIntent>) => applyDocumentWrite(ctx, write);
  return [
    {
      method: 'POST',
      path: `/api/${name}`,
      validate({ body }) {
        const value = recordBody(body, 'the body is the record: a JSON object');
        if (!value.ok) return value;
        const id = newRecordId(name, ctx.now());
        return valid({ op: 'create', collection: name, id, value: value.value });
      },
      handle,
    },
    {
      method: 'PATCH',
      path: `/api/${name}/:id`,
      validate(input) {
        const id = recordId(input);
        if (!id.ok) return id;
        const patch = recordBody(input.body, 'the body is a merge patch: a JSON object');
        if (!patch.ok) return patch;
        const ifMatch = requireRevision(input.headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return valid({ op: 'update', collection: name, id: id.value, ifMatch, patch: patch.value });
      },
      handle,
    },
    {
      method: 'DELETE',
      path: `/api/${name}/:id`,
      validate(input) {
        const id = recordId(input);
        if (!id.ok) return id;
        const ifMatch = requireRevision(input.headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return valid({ op: 'delete', collection: name, id: id.value, ifMatch });
      },
      handle,
    },
  ];
}

/** The reads of the collections; registered behind the gate, as the notes' reads. */
export function collectionReadRoutes(ctx: AppContext, names: readonly string[]) {
  return async function register(app: FastifyInstance): Promise<void> {
    for (const name of names) {
      app.get(`/api/${name}`, async (request, reply) => {
        const records = await ctx.store.documents.list(request.principal, name, LIST_LIMIT);
        return reply
          .header('content-type', 'application/json; charset=utf-8')
          .send(`{"items":[${records.map(documentJson).join(',')}]}`);
      });
      app.get(`/api/${name}/:id`, async (request, reply) => {
        const id = (request.params as { id: string }).id;
        if (!RECORD_ID.test(id)) return sendAnswer(reply, badId());
        const record = await ctx.store.documents.get(request.principal, name, id);
        if (!record) return sendProblem(reply, 404, PROBLEM.notFound);
        return reply
          .header(HEADER.etag, formatRevisionTag(record.revision))
          .header('content-type', 'application/json; charset=utf-8')
          .send(documentJson(record));
      });
    }
  };
}

/** A write inside the kit's transaction, answered as SPEC §15 says. */
async function applyDocumentWrite(
  ctx: AppContext,
  write: KitWrite<unknown, DocumentIntent>,
): Promise<Answer> {
  const { principal, key, fingerprint, now, tx, value } = write;
  const pending = ctx.store.documents.apply(tx, { principal, key, fingerprint, now, ...value });
  const result = pending instanceof Promise ? await pending : pending;
  switch (result.kind) {
    case 'applied':
      return storedAnswer(result.response);
    case 'conflict':
      return conflict(ctx, result.current);
    case 'not-found':
      return problemAnswer(404, PROBLEM.notFound);
  }
}

function conflict(ctx: AppContext, current: DocumentRecord): Answer {
  const copy = { id: current.id, revision: current.revision, ...current.value };
  return problemAnswer(
    412,
    PROBLEM.revisionConflict,
    {
      detail: `the record is at revision ${current.revision}`,
      currentRevision: current.revision,
      ...(ctx.conflictIncludesCurrent ? { current: copy } : {}),
    },
    { [HEADER.etag]: formatRevisionTag(current.revision) },
  );
}

/** A record's body: a JSON object without the server's own members, nested at most MAX_DEPTH. */
function recordBody(body: unknown, detail: string): Validation<Record<string, unknown>> {
  if (!isObject(body)) return invalid(detail, [{ path: '', message: 'expected a JSON object' }]);
  const owned = ['id', 'revision'].filter((name) => Object.hasOwn(body, name));
  if (owned.length > 0) {
    return invalid(
      'id and revision are the server’s: the id is in the path, the revision in If-Match',
      owned.map((name) => ({ path: name, message: 'set by the server' })),
    );
  }
  if (depthOf(body, MAX_DEPTH + 1) > MAX_DEPTH) {
    return invalid(`a record nests at most ${MAX_DEPTH} levels`);
  }
  return valid(body);
}

/** How deep `value` nests, counting no further than `limit`. */
function depthOf(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null || limit <= 0) return 0;
  let deepest = 0;
  for (const member of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(member, limit - 1));
    if (deepest >= limit - 1) break;
  }
  return deepest + 1;
}

function recordId(input: WriteInput): Validation<string> {
  const id = input.params.id ?? '';
  return RECORD_ID.test(id) ? valid(id) : { ok: false, answer: badId() };
}

function badId(): Answer {
  return problemAnswer(422, PROBLEM.validationFailed, {
    issues: [{ path: 'id', message: 'expected 1 to 80 of A-Z a-z 0-9 _ -' }],
  });
}

/** `<collection>-<24 hex>`: 12 hex of the creation time, then 12 random (as the notes' ids). */
function newRecordId(name: string, now: number): string {
  return `${name}-${now.toString(16).padStart(12, '0').slice(-12)}${randomUUID().slice(-12)}`;
}
