/**
 * A page of an app that installed sw-outbox, type-checked against the published declarations
 * (`dist/types` through the package's `exports`): every entry resolves, nothing degrades to
 * `any` (each `@ts-expect-error` must find an error), with no DOM-less gaps.
 */
import { connectOutbox, OutboxError, type RowView } from 'sw-outbox/client';
import { canonicalJson, type OutboxRow } from 'sw-outbox/shared';

export async function app(): Promise<string> {
  const outbox = await connectOutbox({ swUrl: '/sw.js', owner: 'user-1' });
  const { id, targetId } = await outbox.enqueue({
    collection: 'notes',
    kind: 'create',
    payload: { title: 'x' },
  });
  // @ts-expect-error the id is a string
  const wrong: number = id;
  const stop = outbox.subscribe((rows: RowView[]) => rows.map((view) => view.status));
  stop();
  // @ts-expect-error an intent names its collection
  await outbox.enqueue({ kind: 'update', targetId, payload: {} });
  const row = (await outbox.rows())[0]?.row as OutboxRow | undefined;
  try {
    await outbox.retry(id);
  } catch (error) {
    if (error instanceof OutboxError) return `${error.code} ${wrong}`;
  }
  return canonicalJson({ id, state: row?.state ?? null });
}
