/// <reference lib="webworker" />
/**
 * A service worker of an app that installed sw-outbox, type-checked with the WebWorker library
 * only (no DOM) against the published declarations.
 */
import { createOutboxEngine, type EngineEvent, restHandler } from 'sw-outbox/sw';

declare const self: ServiceWorkerGlobalScope;

const engine = createOutboxEngine({
  collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
  auth: async () => ({ Authorization: 'Bearer token' }),
  leaseMs: 10_000,
  concurrency: 4,
  onEvent: (event: EngineEvent) => console.log(event.type),
});
engine.attach(self);
// @ts-expect-error the holder id is a string
export const wrong: number = engine.holderId;
