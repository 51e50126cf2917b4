import type { BrowserContext } from '@playwright/test';

/** An engine event as the e2e worker records it (e2e/app/sw.ts). */
export interface WorkerEvent {
  type: string;
  id?: string;
  trigger?: string;
  holderId?: string;
  holder: string;
  fence?: number;
  outcome?: string;
  remaining?: number;
  version: string;
  [key: string]: unknown;
}

/**
 * Events recorded inside every running worker of the context, read straight from the worker
 * realm, so they are there even when no page is open.
 */
export async function workerEvents(context: BrowserContext): Promise<WorkerEvent[]> {
  const perWorker = await Promise.all(
    context
      .serviceWorkers()
      .map((worker) =>
        worker
          .evaluate(
            () => (globalThis as unknown as { __e2e?: { events: unknown[] } }).__e2e?.events ?? [],
          )
          .catch(() => []),
      ),
  );
  return perWorker.flat() as WorkerEvent[];
}
