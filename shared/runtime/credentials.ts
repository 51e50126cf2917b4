import type { OwnerApi } from '../core/outbox-api.ts';
import type { SetAuthOptions } from '../model/connection.ts';
import type { Json } from '../model/json.ts';
import type { OutboxStore } from '../model/store.ts';
import { NO_CREDENTIALS } from '../plan/classify.ts';
import type { AuthSource } from './fetch-transport.ts';

/**
 * Where a sender finds credentials at send time (SPEC §13 "Credentials"). Rows never hold them.
 * In order: headers the page handed over with `setAuth` (worker memory, or the `meta` store when
 * the app opted in with `persist`), then the app's `auth(owner)` hook. An owner that once used
 * `setAuth` is marked in `meta` (without the secret unless persisted), so after a restart its rows
 * wait as `held` instead of going out anonymously. `setAuth(null)` signs the owner out: the mark
 * stays and the secret goes, so its rows wait as `held` until credentials for that owner come
 * back — never sent with none, nor with the cookie of whoever signed in next (a cookie jar holds
 * the last user). `setAuth({})` says the owner uses the cookie session, and is remembered. Owners
 * never marked and without a hook use cookie sessions: no headers.
 */

/** The app's hook (§14): headers for an owner, or null/undefined when it has none right now. */
export type AuthHook = (
  owner: string,
) => Promise<Record<string, string> | null | undefined> | Record<string, string> | null | undefined;

/** An owner's mark in `meta`: credentials required (and kept, when persisted), or cookies. */
type StoredAuth = { required: true; headers?: Record<string, string> } | { cookies: true };

/** The `meta` key of an owner's credential record. */
export const authMetaKey = (owner: string): string => `auth:${owner}`;

/** An owner's credentials at send time: set by the page, read by the transport. */
export interface Credentials {
  /**
   * Sets an owner's headers; `{}` for the cookie session; null signs the owner out (its rows are
   * held until credentials for it come back).
   */
  set(
    owner: string,
    headers: Record<string, string> | null,
    options?: SetAuthOptions,
  ): Promise<void>;
  /**
   * Marks an owner whose requests were made with credentials (a queued request that carried an
   * `Authorization`): its rows never go without them (§13). What the owner has is kept; an owner
   * the app said uses the cookie session stays so.
   */
  require(owner: string): Promise<void>;
  /** The transport's {@link AuthSource}. */
  readonly source: AuthSource;
}

/** Credentials over one store, with an optional app hook. */
export function createCredentials(store: () => Promise<OutboxStore>, hook?: AuthHook): Credentials {
  const memory = new Map<string, Record<string, string> | null>();
  const loaded = new Map<string, Promise<StoredAuth | undefined>>();

  const stored = (owner: string) => {
    let pending = loaded.get(owner);
    if (pending === undefined) {
      pending = store()
        .then((s) => s.getMeta(authMetaKey(owner)))
        .then((value) => (isStoredAuth(value) ? value : undefined));
      loaded.set(owner, pending);
    }
    return pending;
  };

  return {
    async set(owner, headers, options = {}) {
      const s = await store();
      const record: StoredAuth =
        headers === null
          ? { required: true }
          : Object.keys(headers).length === 0
            ? { cookies: true }
            : options.persist
              ? { required: true, headers }
              : { required: true };
      await s.setMeta(authMetaKey(owner), record as Json);
      memory.set(owner, headers);
      loaded.set(owner, Promise.resolve(record));
    },
    async require(owner) {
      const s = await store();
      const kept = await s.updateMeta(authMetaKey(owner), (current) =>
        isStoredAuth(current) ? current : { required: true },
      );
      loaded.set(owner, Promise.resolve(kept as StoredAuth));
    },
    async source(owner) {
      const inMemory = memory.get(owner);
      if (inMemory) return inMemory;
      const record = await stored(owner);
      if (record !== undefined && 'headers' in record && record.headers) return record.headers;
      if (hook) return (await hook(owner)) ?? null;
      return record !== undefined && 'required' in record ? null : {};
    },
  };
}

function isStoredAuth(value: unknown): value is StoredAuth {
  if (typeof value !== 'object' || value === null) return false;
  if ((value as { cookies?: unknown }).cookies === true) return true;
  const headers = (value as { headers?: unknown }).headers;
  return (
    (value as { required?: unknown }).required === true &&
    (headers === undefined ||
      (typeof headers === 'object' &&
        headers !== null &&
        Object.values(headers).every((v) => typeof v === 'string')))
  );
}

/**
 * `setAuth` (§13): hands the headers over, then lets go the rows that waited only for them —
 * those held because a worker started without credentials (say, after the browser stopped it)
 * and never sent. Rows a server answered 401 stay held until the app calls `resumeHeld`: only
 * the app knows when the token it rejected was replaced.
 */
export async function handOverCredentials(
  credentials: Credentials,
  api: OwnerApi,
  owner: string,
  headers: Record<string, string> | null,
  options: SetAuthOptions = {},
): Promise<number> {
  await credentials.set(owner, headers, options);
  if (headers === null) return 0;
  const resumed = await api.resumeHeld({ code: NO_CREDENTIALS });
  if (resumed > 0) void api.flush().catch(() => undefined);
  return resumed;
}
