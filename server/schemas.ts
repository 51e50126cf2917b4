import { z } from 'zod';
import { USER_PATTERN } from './auth.ts';

/** Limits of the demo collection; bodies beyond the byte limit get 413 before parsing. */
export const NOTE_LIMITS = { title: 200, body: 10_000 } as const;

/** `POST /api/notes` (SPEC §15). Unknown fields are rejected so client bugs surface. */
export const CreateNoteSchema = z.strictObject({
  title: z.string().min(1).max(NOTE_LIMITS.title),
  body: z.string().max(NOTE_LIMITS.body).optional(),
});

/** `PATCH /api/notes/:id`: a partial update with at least one field. */
export const PatchNoteSchema = z
  .strictObject({
    title: z.string().min(1).max(NOTE_LIMITS.title).optional(),
    body: z.string().max(NOTE_LIMITS.body).optional(),
  })
  .refine((patch) => patch.title !== undefined || patch.body !== undefined, {
    message: 'a patch changes at least one of title, body',
  });

/** `:id` of a note: server ids are `note-<24 hex>`, but any id of the engine's pattern is accepted. */
export const NoteParamsSchema = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/) });

/** `POST /auth/login`. */
export const LoginSchema = z.strictObject({ user: z.string().regex(USER_PATTERN) });

/** `POST /__faults/edit`: an edit by "another device". */
export const OtherDeviceEditSchema = z.strictObject({
  user: z.string().regex(USER_PATTERN),
  id: z.string().min(1).max(80),
  title: z.string().min(1).max(NOTE_LIMITS.title).optional(),
  body: z.string().max(NOTE_LIMITS.body).optional(),
});

/** `POST /__faults/expire-token`. */
export const ExpireTokenSchema = z.strictObject({ user: z.string().regex(USER_PATTERN) });

/** Zod issues as the `issues` member of a `validation-failed` problem. */
export function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}
