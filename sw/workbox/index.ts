/**
 * `sw-outbox/workbox`: the Workbox drop-in (SPEC §22). `OutboxPlugin` takes the place of
 * `BackgroundSyncPlugin` on a strategy's route, `importWorkboxQueue` moves what a
 * `workbox-background-sync` queue already holds into the outbox, and `requestsHandler` is the
 * collection both write to.
 *
 * ```ts
 * const engine = createOutboxEngine({ collections: { requests: requestsHandler() } });
 * engine.attach(self);
 * importWorkboxQueue(self, engine, { queueName: 'writes', owner: 'me' });
 * registerRoute(/\/api\//, new NetworkOnly({ plugins: [new OutboxPlugin({ engine, owner: 'me' })] }), 'POST');
 * ```
 */
export {
  type CapturedRequest,
  CREDENTIAL_HEADERS,
  captureRequest,
  REQUEST_KIND,
  REQUESTS_COLLECTION,
  readCapturedRequest,
  requestsHandler,
  requestTarget,
} from '../../shared/wire/requests-handler.ts';
export { importedRowId } from './entry.ts';
export {
  importWorkboxQueue,
  runPass as runWorkboxImportPass,
  type WorkboxImport,
  type WorkboxImportEvent,
  type WorkboxImportOptions,
  type WorkboxImportReport,
} from './import.ts';
export { OutboxPlugin, type OutboxPluginOptions, type QueuedAnswer } from './plugin.ts';
export { WORKBOX_DB_NAME, type WorkboxQueueEntry } from './queue-db.ts';
