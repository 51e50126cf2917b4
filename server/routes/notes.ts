import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { formatRevisionTag, HEADER, PROBLEM } from 'sw-outbox/wire';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import { storedAnswer } from '../idempotency.ts';
import { valid } from '../kit/answers.ts';
import type { KitWrite, WriteRoute } from '../kit/outbox-kit.ts';
import {
  type Answer,
  type ProblemExtras,
  problemAnswer,
  sendAnswer,
  sendProblem,
} from '../problem.ts';
import {
  CreateNoteSchema,
  issuesOf,
  NoteParamsSchema,
  NoteVersionParamsSchema,
  PatchNoteSchema,
} from '../schemas.ts';
import { type NoteRecord, noteJson, noteVersionJson, type WriteIntent } from '../store/port.ts';
import { requireRevision } from '../write.ts';

/** At most this many notes are listed; the demo never gets near it. */
const LIST_LIMIT = 1000;

/** A route of the kit (server/kit/) over the reference store, whatever its client. */
export type StoreRoute<V> = WriteRoute<unknown, V>;

/**
 * The writes of the demo collection `notes` (SPEC §15) as routes of the kit: create, partial
 * update and delete. Every write requires `Idempotency-Key` and passes the kit's three checks;
 * updates and deletes require `If-Match` and bump the revision. Requests alone and batch items
 * alike (SPEC §15.1). Validation reads the path, the body, then `If-Match`.
 */
export function noteWriteRoutes(ctx: AppContext): Array<StoreRoute<WriteIntent>> {
  const handle = (write: KitWrite<unknown, WriteIntent>) => applyNoteWrite(ctx, write);
  return [
    {
      method: 'POST',
      path: '/api/notes',
      validate({ body }) {
        const fields = validate(CreateNoteSchema, body);
        if (!fields.ok) return fields;
        const id = newNoteId(ctx.now());
        const { title, body: text = '' } = fields.value;
        return valid({ op: 'create', id, title, body: text });
      },
      handle,
    },
    {
      method: 'PATCH',
      path: '/api/notes/:id',
      validate({ params, body, headers }) {
        const path = validate(NoteParamsSchema, params);
        if (!path.ok) return path;
        const patch = validate(PatchNoteSchema, body);
        if (!patch.ok) return patch;
        const ifMatch = requireRevision(headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return valid({ op: 'update', id: path.value.id, ifMatch, patch: patch.value });
      },
      handle,
    },
    {
      method: 'DELETE',
      path: '/api/notes/:id',
      validate({ params, headers }) {
        const path = validate(NoteParamsSchema, params);
        if (!path.ok) return path;
        const ifMatch = requireRevision(headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return valid({ op: 'delete', id: path.value.id, ifMatch });
      },
      handle,
    },
  ];
}

/**
 * A note write inside the kit's transaction: the store's compare-and-set with the kit's client,
 * answered as SPEC §15 says — the stored success, 412 with the current revision, the server copy
 * (when configured) and `history`, or 404.
 */
async function applyNoteWrite(ctx: AppContext, write: KitWrite<unknown, WriteIntent>) {
  const { principal, key, fingerprint, now, tx, value, defer } = write;
  const pending = ctx.store.applyWrite(tx, { principal, key, fingerprint, now, ...value }, defer);
  const result = pending instanceof Promise ? await pending : pending;
  switch (result.kind) {
    case 'applied':
      return storedAnswer(result.response);
    case 'conflict': {
      const { current } = result;
      return problemAnswer(412, PROBLEM.revisionConflict, conflictExtras(ctx, current), {
        [HEADER.etag]: formatRevisionTag(current.revision),
      });
    }
    case 'not-found':
      return problemAnswer(404, PROBLEM.notFound);
  }
}

/** Where the reference server serves a version of a note (SPEC §10.1). */
function noteHistoryPath(id: string, revision: number): string {
  return `/api/notes/${encodeURIComponent(id)}/history/${revision}`;
}

/**
 * The members of a `revision-conflict` answer (SPEC §10, §10.1): the current revision, the
 * server copy when configured, and `history`, the version the resend would overwrite — this
 * server keeps it once superseded, so a client can read it later and restore it.
 */
function conflictExtras(
  ctx: Pick<AppContext, 'conflictIncludesCurrent'>,
  current: NoteRecord,
): ProblemExtras {
  return {
    detail: `the note is at revision ${current.revision}`,
    currentRevision: current.revision,
    ...(ctx.conflictIncludesCurrent ? { current } : {}),
    history: { revision: current.revision, href: noteHistoryPath(current.id, current.revision) },
  };
}

/** The reads of the demo collection `notes` (SPEC §15); its writes are the kit's. */
export function notesRoutes(ctx: AppContext) {
  return async function register(app: FastifyInstance): Promise<void> {
    app.get('/api/notes', async (request, reply) => {
      const notes = await ctx.store.listNotes(request.principal, LIST_LIMIT);
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .send(`{"items":[${notes.map(noteJson).join(',')}]}`);
    });

    app.get('/api/notes/:id', async (request, reply) => {
      const params = validate(NoteParamsSchema, request.params);
      if (!params.ok) return sendAnswer(reply, params.answer);
      const note = await ctx.store.getNote(request.principal, params.value.id);
      if (!note) return sendProblem(reply, 404, PROBLEM.notFound);
      return reply
        .header(HEADER.etag, formatRevisionTag(note.revision))
        .header('content-type', 'application/json; charset=utf-8')
        .send(noteJson(note));
    });

    // SPEC §10.1: a version of the caller's note — one a write superseded, or the current one
    // (which a 412 names before it is overwritten). Another principal's note is unknown (404).
    app.get('/api/notes/:id/history/:revision', async (request, reply) => {
      const params = validate(NoteVersionParamsSchema, request.params);
      if (!params.ok) return sendAnswer(reply, params.answer);
      const { id, revision } = params.value;
      const version = await ctx.store.getVersion(request.principal, id, revision);
      if (version) {
        return reply
          .header('content-type', 'application/json; charset=utf-8')
          .send(noteVersionJson(version));
      }
      const note = await ctx.store.getNote(request.principal, id);
      if (note?.revision !== revision)
        return sendProblem(reply, 404, PROBLEM.notFound, { detail: 'no such version' });
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .send(noteVersionJson({ ...note, supersededBy: null, supersededAt: null }));
    });
  };
}

/**
 * `note-<24 hex>`: 12 hex of the creation time, then 12 random. Time-ordered ids are appended at
 * the end of the notes index instead of at random pages, which keeps writes cheap.
 */
function newNoteId(now: number): string {
  return `note-${now.toString(16).padStart(12, '0').slice(-12)}${randomUUID().slice(-12)}`;
}

/** Parses with `schema`, or refuses with 422 `validation-failed`. */
function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
): { ok: true; value: z.output<S> } | { ok: false; answer: Answer } {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    answer: problemAnswer(422, PROBLEM.validationFailed, { issues: issuesOf(result.error) }),
  };
}
