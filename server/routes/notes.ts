import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { formatRevisionTag, HEADER, PROBLEM } from 'sw-outbox/wire';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import { type Answer, problemAnswer, sendAnswer, sendProblem } from '../problem.ts';
import {
  CreateNoteSchema,
  issuesOf,
  NoteParamsSchema,
  NoteVersionParamsSchema,
  PatchNoteSchema,
} from '../schemas.ts';
import { noteJson, noteVersionJson } from '../store/port.ts';
import { requireRevision } from '../write.ts';
import { registerWriteRoutes, type WriteRoute } from '../write-route.ts';

/** At most this many notes are listed; the demo never gets near it. */
const LIST_LIMIT = 1000;

/**
 * The writes of the demo collection `notes` (SPEC §15): create, partial update and delete. Every
 * write requires `Idempotency-Key` and passes the three checks; updates and deletes require
 * `If-Match` and bump the revision. Routes of their own and batch items alike (SPEC §15.1).
 */
export function noteWriteRoutes(ctx: AppContext): WriteRoute[] {
  return [
    {
      method: 'POST',
      url: '/api/notes',
      intent({ body }) {
        const fields = validate(CreateNoteSchema, body);
        if (!fields.ok) return fields;
        const id = newNoteId(ctx.now());
        const { title, body: text = '' } = fields.value;
        return { ok: true, intent: { op: 'create', id, title, body: text } };
      },
    },
    {
      method: 'PATCH',
      url: '/api/notes/:id',
      intent({ params, body, headers }) {
        const path = validate(NoteParamsSchema, params);
        if (!path.ok) return path;
        const patch = validate(PatchNoteSchema, body);
        if (!patch.ok) return patch;
        const ifMatch = requireRevision(headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return {
          ok: true,
          intent: { op: 'update', id: path.value.id, ifMatch, patch: patch.value },
        };
      },
    },
    {
      method: 'DELETE',
      url: '/api/notes/:id',
      intent({ params, headers }) {
        const path = validate(NoteParamsSchema, params);
        if (!path.ok) return path;
        const ifMatch = requireRevision(headers);
        if (typeof ifMatch !== 'number') return { ok: false, answer: ifMatch };
        return { ok: true, intent: { op: 'delete', id: path.value.id, ifMatch } };
      },
    },
  ];
}

/** The demo collection `notes` (SPEC §15): its writes (see {@link noteWriteRoutes}) and reads. */
export function notesRoutes(ctx: AppContext, writes: readonly WriteRoute[]) {
  return async function register(app: FastifyInstance): Promise<void> {
    registerWriteRoutes(app, ctx, writes);

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
