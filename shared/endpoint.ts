import { finalizer, releaseProxy } from 'comlink';
import type { EndpointApi, Hello, WatchUpdate } from './connection.ts';
import type { OwnerApi } from './core-types.ts';
import { type Credentials, handOverCredentials } from './credentials.ts';
import { OutboxError } from './errors.ts';
import type { RowView } from './protocol.ts';
import type { RowFeed } from './row-feed.ts';
import { type Schema, summarizeIssues, z } from './schema-kit.ts';

/**
 * One connection's API (SPEC §13), bound to one owner. Every argument that crosses the boundary
 * is validated here with zod; `enqueue` input is validated by the core's owner API. Listener
 * proxies are released when unsubscribed and when the page releases the connection.
 */

const rowId = z.string().check(z.minLength(1), z.maxLength(200));
const filterSchema = z.optional(
  z.strictObject({ collection: z.optional(z.string()), targetId: z.optional(z.string()) }),
);
const limitSchema = z.optional(
  z.strictObject({
    limit: z.optional(z.number().check(z.int(), z.positive(), z.maximum(10_000))),
  }),
);
const headersSchema = z.nullable(
  z.record(z.string().check(z.minLength(1), z.maxLength(200)), z.string().check(z.maxLength(8192))),
);
const authOptionsSchema = z.optional(z.strictObject({ persist: z.optional(z.boolean()) }));
const listenerSchema = z.custom<(value: unknown) => unknown>(
  (value) => typeof value === 'function',
  { error: 'expected a listener function (a Comlink proxy)' },
);

function parse<T>(schema: Schema<T>, value: unknown, argument: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = summarizeIssues(result.error.issues);
  const code = argument === 'id' ? 'invalid_id' : 'invalid_argument';
  throw new OutboxError(code, `invalid ${argument}: ${issues[0]?.message ?? 'rejected'}`, {
    argument,
    issues,
  });
}

export interface EndpointDeps {
  owner: string;
  holderId: string;
  bundle: string;
  api: OwnerApi;
  feed: RowFeed;
  credentials: Credentials;
  /** The store's change-notice channel, told to the page so it can notice a stopped worker. */
  changes?: string;
}

export interface Endpoint {
  readonly api: EndpointApi & { [finalizer]: () => void };
  dispose(): void;
}

export function createEndpoint(deps: EndpointDeps): Endpoint {
  const { api, owner } = deps;
  const subscriptions = new Map<string, { stop: () => void; listener: unknown }>();
  let nextId = 1;
  let disposed = false;

  // A dead page never answers the release; nothing waits on it.
  const release = (listener: unknown) =>
    (listener as { [releaseProxy]?: () => void })[releaseProxy]?.();
  const track = (stop: () => void, listener: unknown) => {
    const id = `s${nextId++}`;
    subscriptions.set(id, { stop, listener });
    return id;
  };
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    for (const { stop, listener } of subscriptions.values()) {
      stop();
      release(listener);
    }
    subscriptions.clear();
    deps.feed.close();
  };

  const endpoint: EndpointApi & { [finalizer]: () => void } = {
    async hello(): Promise<Hello> {
      return {
        holderId: deps.holderId,
        owner,
        bundle: deps.bundle,
        ...(deps.changes === undefined ? {} : { changes: deps.changes }),
      };
    },
    enqueue: (input) => api.enqueue(input),
    rows: async (filter) => api.rows(parse(filterSchema, filter, 'filter')),
    row: async (id) => api.row(parse(rowId, id, 'id')),
    stats: () => api.stats(),
    resumeHeld: () => api.resumeHeld(),
    retry: async (id) => api.retry(parse(rowId, id, 'id')),
    discard: async (id) => api.discard(parse(rowId, id, 'id')),
    conflicts: async (options) => api.conflicts(parse(limitSchema, options, 'options')),
    receipts: async (options) => api.receipts(parse(limitSchema, options, 'options')),
    receipt: async (requestId) => api.receipt(parse(rowId, requestId, 'id')),
    async subscribe(listener, filter) {
      const deliver = parse(listenerSchema, listener, 'listener') as (rows: RowView[]) => unknown;
      return track(deps.feed.subscribe(parse(filterSchema, filter, 'filter'), deliver), listener);
    },
    async watch(id, listener) {
      const deliver = parse(listenerSchema, listener, 'listener') as (
        update: WatchUpdate,
      ) => unknown;
      return track(deps.feed.watch(parse(rowId, id, 'id'), deliver), listener);
    },
    async unsubscribe(subscriptionId) {
      const entry = subscriptions.get(parse(z.string(), subscriptionId, 'subscriptionId'));
      if (entry === undefined) return;
      subscriptions.delete(subscriptionId);
      entry.stop();
      release(entry.listener);
    },
    async setAuth(headers, options) {
      await handOverCredentials(
        deps.credentials,
        api,
        owner,
        parse(headersSchema, headers, 'headers'),
        parse(authOptionsSchema, options, 'options') ?? {},
      );
    },
    // Comlink calls this when the page releases its proxy (client `close()`).
    [finalizer]: dispose,
  };
  return { api: endpoint, dispose };
}
