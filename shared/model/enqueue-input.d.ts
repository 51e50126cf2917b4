import { type Infer } from './schema-kit.ts';
/**
 * The enqueue argument's schema (SPEC §13), checked where intents arrive: the owner API in the
 * worker and the page sender. A file of its own, so the page, which only sends intents, does not
 * bundle zod.
 */
/** What the app hands to `enqueue`. A create omits `targetId` (it becomes `pending:<id>`). */
export declare const EnqueueInputSchema: import('zod/mini').ZodMiniObject<
  {
    collection: import('zod/mini').ZodMiniString<string>;
    kind: import('zod/mini').ZodMiniString<string>;
    targetId: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
    baseRevision: import('zod/mini').ZodMiniOptional<
      import('zod/mini').ZodMiniNullable<import('zod/mini').ZodMiniNumber<number>>
    >;
    payload: import('zod/mini').ZodMiniOptional<
      import('./schema-kit.ts').Schema<import('./json.ts').Json>
    >;
    id: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
    meta: import('zod/mini').ZodMiniOptional<
      import('./schema-kit.ts').Schema<import('./json.ts').Json>
    >;
    owner: import('zod/mini').ZodMiniOptional<import('zod/mini').ZodMiniString<string>>;
  },
  import('zod/v4/core').$strict
>;
/** The argument of `enqueue`, as the app passes it. */
export type EnqueueInput = Infer<typeof EnqueueInputSchema>;
