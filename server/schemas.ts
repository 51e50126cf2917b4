import { MAX_REVISION } from 'sw-outbox/wire';
import { z } from 'zod';
import { USER_PATTERN } from './auth.ts';
import { isStorableText } from './storable-text.ts';

/** Limits of the demo collection; bodies beyond the byte limit get 413 before parsing. */
const NOTE_LIMITS = { title: 200, body: 10_000 } as const;

/**
 * A stored string field: within `max` UTF-16 units and storable as is. Refused with 422
 * `validation-failed` otherwise, before the request reaches the ledger.
 */
function storedText(min: number, max: number) {
  return z
    .string()
    .min(min)
    .max(max)
    .refine(
      isStorableText,
      'must not contain NUL (U+0000) or an unpaired surrogate (U+D800–U+DFFF)',
    );
}

/** `POST /api/notes` (SPEC §15). Unknown fields are rejected so client bugs surface. */
export const CreateNoteSchema = z.strictObject({
  title: storedText(1, NOTE_LIMITS.title),
  body: storedText(0, NOTE_LIMITS.body).optional(),
});

/** `PATCH /api/notes/:id`: a partial update with at least one field. */
export const PatchNoteSchema = z
  .strictObject({
    title: storedText(1, NOTE_LIMITS.title).optional(),
    body: storedText(0, NOTE_LIMITS.body).optional(),
  })
  .refine((patch) => patch.title !== undefined || patch.body !== undefined, {
    message: 'a patch changes at least one of title, body',
  });

/** Note ids: server ids are `note-<24 hex>`, but any id of the engine's pattern is accepted. */
const NOTE_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** `:id` of a note. */
export const NoteParamsSchema = z.object({ id: z.string().regex(NOTE_ID) });

/** `:id/history/:revision` of a note version (SPEC §10.1); revisions as `If-Match` has them. */
export const NoteVersionParamsSchema = z.object({
  id: z.string().regex(NOTE_ID),
  revision: z
    .string()
    .regex(/^\d{1,10}$/)
    .transform(Number)
    .pipe(z.number().int().max(MAX_REVISION)),
});

/** `POST /auth/login`. */
export const LoginSchema = z.strictObject({ user: z.string().regex(USER_PATTERN) });

/** `POST /__faults/edit`: an edit by "another device". */
export const OtherDeviceEditSchema = z.strictObject({
  user: z.string().regex(USER_PATTERN),
  id: z.string().regex(NOTE_ID),
  title: storedText(1, NOTE_LIMITS.title).optional(),
  body: storedText(0, NOTE_LIMITS.body).optional(),
});

/** `?user=` of the admin routes: absent, or a demo user name. */
export const UserQuerySchema = z.object({ user: z.string().regex(USER_PATTERN).optional() });

/** `POST /__faults/expire-token`. */
export const ExpireTokenSchema = z.strictObject({ user: z.string().regex(USER_PATTERN) });

/** Zod issues as the `issues` member of a `validation-failed` problem. */
export function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}
