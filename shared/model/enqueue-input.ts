import { ID_PATTERN } from './id-pattern.ts';
import { count, type Infer, jsonValue, text, z } from './schema-kit.ts';

/**
 * The enqueue argument's schema (SPEC §13), checked where intents arrive: the owner API in the
 * worker and the page sender. A file of its own, so the page, which only sends intents, does not
 * bundle zod.
 */

/** What the app hands to `enqueue`. A create omits `targetId` (it becomes `pending:<id>`). */
export const EnqueueInputSchema = z.strictObject({
  collection: text(1, 100),
  kind: text(1, 40),
  targetId: z.optional(text(1, 200)),
  baseRevision: z.optional(z.nullable(count)),
  payload: z.optional(jsonValue),
  id: z.optional(text(8, 80, ID_PATTERN, `expected an id matching ${ID_PATTERN}`)),
  meta: z.optional(jsonValue),
  /** Optional: when given it must be the connection's owner (`owner_mismatch` otherwise). */
  owner: z.optional(text(1)),
});
/** The argument of `enqueue`, as the app passes it. */
export type EnqueueInput = Infer<typeof EnqueueInputSchema>;
