import { createServer } from 'node:http';
import { kitRequestListener } from '../../server/kit/node-http.ts';
import { openTodoApp } from './kit-todo-app.ts';

/**
 * The todo app of kit-todo-app.ts as a process of its own, on PostgreSQL, served by `node:http`
 * through the kit's Node bridge: `KIT_PG_URL` and `KIT_PG_SCHEMA` name the shared ledger. Prints
 * `listening on http://127.0.0.1:<port>` like every server of this repository.
 */
const app = await openTodoApp({
  kind: 'postgres',
  connectionString: process.env.KIT_PG_URL!,
  schema: process.env.KIT_PG_SCHEMA!,
  poolSize: 6,
});
const server = createServer(kitRequestListener(app.kit));
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void app.close().finally(() => process.exit(0));
});
