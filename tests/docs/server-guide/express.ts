import express from 'express';
import { outboxKitRouter } from 'sw-outbox-server/kit/express';
import { kit } from './kit.ts';

const app = express();
// First, before any body parser: the kit reads the bodies of its writes itself, after check 1,
// and passes every other request on.
app.use(outboxKitRouter(kit));
app.use(express.json()); // your other routes keep theirs
app.get('/api/todos', (_request, response) => {
  response.json([]); // your reads are your own routes
});
app.listen(3000);
