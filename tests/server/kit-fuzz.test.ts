import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETENTION_HEADER } from '../../server/kit/index.ts';
import { kitRequestListener } from '../../server/kit/node-http.ts';
import { dropSchema, newSchema, PG_SKIP_REASON, PG_URL } from './helpers.ts';
import { HostileClient, sendHostile } from './hostile-client.ts';
import { openTodoApp, type TodoApp } from './kit-todo-app.ts';

/**
 * The reference server's generated hostile requests and batches (hostile-requests.ts,
 * hostile-batches.ts) sent over real HTTP to a kit app — the todo app serving `/api/notes`,
 * through the kit's `node:http` bridge — on SQLite and PostgreSQL. Every answer the kit gives
 * (it carries the retention header) must be no 5xx and, for an error, `application/problem+json`
 * with a known `type` that does not echo the path; items of a batch answer alike. What Node's own
 * parser refuses before the kit sees it may be a bare 400, but never a 5xx.
 *
 * `FUZZ_KIT_RUNS` (default 300) requests then a third as many batches, in sequence;
 * `FUZZ_SEED` replays a run.
 */

const RUNS = Number(process.env.FUZZ_KIT_RUNS || 300);
const SEED = Number(process.env.FUZZ_SEED || Math.floor(Math.random() * 2 ** 31));
/**
 * Node's own limits on receiving a request: a body announced and never sent is cut by the
 * server (408), as any deployment configures it; the kit reads what the server hands it.
 */
const TIMEOUTS = { headersTimeout: 500, requestTimeout: 1000, connectionsCheckingInterval: 200 };

/** A kit app on a port. */
class KitTarget {
  client: HostileClient | undefined;

  constructor(
    readonly name: string,
    readonly app: TodoApp<unknown>,
    readonly server: Server,
  ) {}

  async arrange(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.client = new HostileClient(this.name, (this.server.address() as AddressInfo).port);
    await this.client.arrange();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    await this.app.close();
  }
}

const fuzz = (target: KitTarget) =>
  sendHostile(target.client!, {
    runs: RUNS,
    seed: SEED,
    judged: { kind: 'kit', header: RETENTION_HEADER },
  });

describe(`hostile requests to a kit app (seed ${SEED})`, () => {
  const schema = newSchema('kit_fuzz');
  const targets: KitTarget[] = [];

  beforeAll(async () => {
    const sqlite = await openTodoApp({ kind: 'sqlite', collection: '/api/notes' });
    targets.push(
      new KitTarget('SQLite', sqlite, createServer(TIMEOUTS, kitRequestListener(sqlite.kit))),
    );
    if (!PG_SKIP_REASON) {
      const postgres = await openTodoApp({
        kind: 'postgres',
        connectionString: PG_URL,
        schema,
        collection: '/api/notes',
      });
      targets.push(
        new KitTarget(
          'PostgreSQL',
          postgres,
          createServer(TIMEOUTS, kitRequestListener(postgres.kit)),
        ),
      );
    }
    for (const target of targets) await target.arrange();
  });
  afterAll(async () => {
    for (const target of targets) await target.close();
    if (!PG_SKIP_REASON) await dropSchema(schema);
  });

  it('answers every generated request and batch with no 5xx and a typed problem for every error', async () => {
    const results = await Promise.all(targets.map(fuzz));
    for (const [index, result] of results.entries()) {
      console.log(`kit fuzz ${targets[index]!.name} (seed ${SEED}): ${result.statuses}`);
    }
    const failures = results.flatMap((result) => result.failures);
    expect(failures.slice(0, 10), `FUZZ_SEED=${SEED}`).toEqual([]);
  }, 120_000);
});
