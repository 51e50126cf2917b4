import type { FastifyInstance } from 'fastify';
import { type AppOptions, buildApp, DEFAULT_RETENTION_MS } from './app.ts';
import { openStore, type StoreConfig } from './store/open.ts';
import type { ServerStore } from './store/port.ts';
import { type Sweeper, startSweeper } from './sweeper.ts';

/** Options of {@link startServer}: the app's options and where to keep the ledger. */
export interface StartOptions extends Omit<AppOptions, 'store'> {
  /** An open store, or how to open one (closed again by `close()`). */
  store: ServerStore | StoreConfig;
  /** Port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Interval of the ledger expiry sweep. Default 10 minutes. */
  sweepIntervalMs?: number;
}

/** A listening reference server. */
export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  app: FastifyInstance;
  store: ServerStore;
  sweeper: Sweeper;
  /** Stops listening, the sweep, and closes a store this call opened. */
  close(): Promise<void>;
}

/**
 * Opens the store (if given a config), builds the app and listens on 127.0.0.1 only (SPEC §15:
 * servers and load tests use loopback addresses).
 */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const given = options.store;
  const ownsStore = !isServerStore(given);
  const store = isServerStore(given) ? given : await openStore(given);
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
  let app: FastifyInstance;
  try {
    app = await buildApp({ ...options, store, retentionMs });
    await app.listen({ host: '127.0.0.1', port: options.port });
  } catch (error) {
    if (ownsStore) await store.close();
    throw error;
  }
  const sweeper = startSweeper({
    store,
    retentionMs,
    intervalMs: options.sweepIntervalMs,
    now: options.now,
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    app,
    store,
    sweeper,
    async close() {
      sweeper.stop();
      await app.close();
      if (ownsStore) await store.close();
    },
  };
}

function isServerStore(store: ServerStore | StoreConfig): store is ServerStore {
  return typeof (store as Partial<ServerStore>).write === 'function';
}
