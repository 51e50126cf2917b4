import { type PageSenderConfig, restHandler } from 'sw-outbox/client';

/** The app's page sender config, in a module of its own so that it loads on demand. */
export const pageSender: PageSenderConfig = {
  collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
};
