/**
 * The smallest real page, as an app writes it: connect (with the page sender for a tab that no
 * worker controls yet) and enqueue. The code the page loads first, this entry and everything it
 * imports statically, is the page budget of SPEC §22; the page sender arrives on demand, in a
 * chunk of its own.
 */
import { connectOutbox, restHandler } from 'sw-outbox/client';

const outbox = await connectOutbox({
  swUrl: '/sw.js',
  owner: 'user-1',
  pageSender: { collections: { notes: restHandler({ baseUrl: '/api/notes' }) } },
});
await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'Milk' } });
