/**
 * The smallest real worker, as an app writes it: the engine and `restHandler`. Its bundle, with
 * every dependency, minified and brotli-compressed, is the worker budget of SPEC §22.
 */
import { createOutboxEngine, restHandler } from 'sw-outbox/sw';

declare const self: ServiceWorkerGlobalScope;

createOutboxEngine({ collections: { notes: restHandler({ baseUrl: '/api/notes' }) } }).attach(self);
