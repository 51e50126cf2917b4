import { ID_PATTERN } from './id-pattern.ts';
import { type Infer, jsonValue, z } from './schema-kit.ts';

/**
 * The enqueue argument's schema (SPEC §13), checked where intents arrive: the owner API in the
 * worker and the page sender. A file of its own, so the page, which only sends intents, does not
 * bundle zod.
 */

/** What the app hands to `enqueue`. A create omits `targetId` (it becomes `pending:<id>`). */
export const EnqueueInputSchema = z.strictObject({
  collection: z.string().check(z.minLength(1), z.maxLength(100)),
  kind: z.string().check(z.minLength(1), z.maxLength(40)),
  targetId: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  baseRevision: z.optional(z.nullable(z.number().check(z.int(), z.nonnegative()))),
  payload: z.optional(jsonValue),
  id: z.optional(z.string().check(z.regex(ID_PATTERN))),
  meta: z.optional(jsonValue),
  /** Optional: when given it must be the connection's owner (`owner_mismatch` otherwise). */
  owner: z.optional(z.string().check(z.minLength(1))),
});
/** The argument of `enqueue`, as the app passes it. */
export type EnqueueInput = Infer<typeof EnqueueInputSchema>;
