import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { formatRevisionTag, HEADER, PROBLEM } from 'sw-outbox/wire';
import type { z } from 'zod';
import type { AppContext } from '../context.ts';
import { checkBeforeBody } from '../idempotency.ts';
import { sendProblem } from '../problem.ts';
import {
  CreateNoteSchema,
  issuesOf,
  NoteParamsSchema,
  NoteVersionParamsSchema,
  PatchNoteSchema,
} from '../schemas.ts';
import { noteJson, noteVersionJson } from '../store/port.ts';
import { requireRevision, runWrite } from '../write.ts';

/** At most this many notes are listed; the demo never gets near it. */
const LIST_LIMIT = 1000;

/**
 * The demo collection `notes` (SPEC §15). Every write requires `Idempotency-Key` and passes the
 * three checks; updates and deletes require `If-Match` and bump the revision.
 */
export function notesRoutes(ctx: AppContext) {
  const onRequest = checkBeforeBody(ctx);

  return async function register(app: FastifyInstance): Promise<void> {
    app.post('/api/notes', { onRequest }, async (request, reply) => {
      const body = validate(CreateNoteSchema, request.body, reply);
      if (!body) return reply;
      const id = newNoteId(ctx.now());
      return runWrite(ctx, request, reply, {
        op: 'create',
        id,
        title: body.title,
        body: body.body ?? '',
      });
    });

    app.patch('/api/notes/:id', { onRequest }, async (request, reply) => {
      const params = validate(NoteParamsSchema, request.params, reply);
      if (!params) return reply;
      const patch = validate(PatchNoteSchema, request.body, reply);
      if (!patch) return reply;
      const ifMatch = requireRevision(request, reply);
      if (typeof ifMatch !== 'number') return ifMatch;
      return runWrite(ctx, request, reply, { op: 'update', id: params.id, ifMatch, patch });
    });

    app.delete('/api/notes/:id', { onRequest }, async (request, reply) => {
      const params = validate(NoteParamsSchema, request.params, reply);
      if (!params) return reply;
      const ifMatch = requireRevision(request, reply);
      if (typeof ifMatch !== 'number') return ifMatch;
      return runWrite(ctx, request, reply, { op: 'delete', id: params.id, ifMatch });
    });

    app.get('/api/notes', async (request, reply) => {
      const notes = await ctx.store.listNotes(request.principal, LIST_LIMIT);
      return reply
        .header('content-type', 'application/json; charset=utf-8')
        .send(`{"items":[${notes.map(noteJson).join(',')}]}`);
    });

    app.get('/api/notes/:id', async (request, reply) => {
      const params = validate(NoteParamsSchema, request.params, reply);
      if (!params) return reply;
      const note = await ctx.store.getNote(request.principal, params.id);
      if (!note) return sendProblem(reply, 404, PROBLEM.notFound);
      return reply
        .header(HEADER.etag, formatRevisionTag(note.revision))
        .header('content-type', 'application/json; charset=utf-8')
        .send(noteJson(note));
    });

    // SPEC §10.1: a version of the caller's note — one a write superseded, or the current one
    // (which a 412 names before it is overwritten). Another principal's note is unknown (404).
    app.get('/api/notes/:id/history/:revision', async (request, reply) => {
      const params = validate(NoteVersionParamsSchema, request.params, reply);
      if (!params) return reply;
      const { id, revision } = params;
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
export function newNoteId(now: number): string {
  return `note-${now.toString(16).padStart(12, '0').slice(-12)}${randomUUID().slice(-12)}`;
}

/** Parses with `schema`, or answers 422 `validation-failed` and returns `undefined`. */
function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  reply: FastifyReply,
): z.output<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  sendProblem(reply, 422, PROBLEM.validationFailed, { issues: issuesOf(result.error) });
  return undefined;
}
