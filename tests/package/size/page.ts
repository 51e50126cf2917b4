/**
 * The smallest real page, as an app writes it: connect (with the page sender for a tab that no
 * worker controls yet, its handlers loaded only when it starts) and enqueue. The code the page
 * loads first, this entry and everything it imports statically, is the page budget of SPEC §22;
 * the page sender and its handlers arrive on demand, in chunks of their own.
 */
import { connectOutbox } from 'sw-outbox/client';

const outbox = await connectOutbox({
  swUrl: '/sw.js',
  owner: 'user-1',
  pageSender: () => import('./page-sender-config.ts').then((m) => m.pageSender),
});
await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'Milk' } });
