import type { LoggedRequest } from '../../server/request-log.ts';
import { ServerProcess } from './server-process.ts';

export type { LoggedRequest } from '../../server/request-log.ts';
export type { EffectStats } from './server-process.ts';

/** Whether a logged request came from a service worker: its fetches name the script as Referer. */
export function fromWorker(request: LoggedRequest): boolean {
  if (request.referer === undefined) return false;
  return /^\/sw(-classic)?\.js$/.test(new URL(request.referer).pathname);
}

/**
 * The reference server as the e2e suite uses it: started from the build on a free port with a
 * temporary SQLite file, admin routes on (faults, `/__stats`) and the e2e bundles as static
 * files, so pages, worker and API share one origin.
 */

export interface Note {
  id: string;
  revision: number;
  title: string;
  body?: string;
  deleted?: boolean;
}

export class ReferenceServer extends ServerProcess {
  /** Starts one; `args` go to its command line (`--no-batch`, say). */
  static async start(args: string[] = []): Promise<ReferenceServer> {
    const { url, child, dir } = await ServerProcess.launch({
      command: ['server/dist/cli.js', '--port', '0'],
      args: ['--admin', '--static', 'dist/e2e', ...args],
      label: 'e2e',
      timeoutMs: 15_000,
    });
    return new ReferenceServer(url, child, dir);
  }

  /** Opens a 401 window: tokens issued so far are rejected until the user logs in again. */
  async expireToken(user: string): Promise<void> {
    await this.fetch('/__faults/expire-token', { method: 'POST', body: JSON.stringify({ user }) });
    this.forgetToken(user);
  }

  /** Every `/api/` request of `user` as the server saw it, in arrival order. */
  async requests(user: string): Promise<LoggedRequest[]> {
    const response = await this.fetch(`/__requests?user=${encodeURIComponent(user)}`);
    return ((await response.json()) as { requests: LoggedRequest[] }).requests;
  }

  /** The writes of `user` that carried `key`, in arrival order. */
  async sends(user: string, key: string): Promise<LoggedRequest[]> {
    return (await this.requests(user)).filter((request) => request.key === key);
  }

  /** Forgets every idempotency key, as the ledger's expiry sweep would after the retention. */
  async forgetKeys(): Promise<number> {
    const response = await this.fetch('/__faults/forget-keys', { method: 'POST' });
    return ((await response.json()) as { forgotten: number }).forgotten;
  }

  /** Lets the requests a `delay` rule holds for `user` go now; resolves with how many. */
  async release(user: string): Promise<number> {
    const response = await this.fetch('/__faults/release', {
      method: 'POST',
      body: JSON.stringify({ user }),
    });
    return ((await response.json()) as { released: number }).released;
  }

  /** Another device edits a note: its revision moves on without this outbox. */
  async editElsewhere(user: string, id: string, title: string): Promise<Note> {
    const response = await this.fetch('/__faults/edit', {
      method: 'POST',
      body: JSON.stringify({ user, id, title }),
    });
    if (!response.ok) throw new Error(`edit failed: ${response.status}`);
    return (await response.json()) as Note;
  }

  async notes(user: string): Promise<Note[]> {
    const response = await this.fetch('/api/notes', { headers: await this.auth(user) });
    return ((await response.json()) as { items: Note[] }).items;
  }

  async note(user: string, id: string): Promise<Note | undefined> {
    const response = await this.fetch(`/api/notes/${encodeURIComponent(id)}`, {
      headers: await this.auth(user),
    });
    return response.ok ? ((await response.json()) as Note) : undefined;
  }

  /** Creates a note directly (not through an outbox), for tests that edit an existing record. */
  async createNote(user: string, title: string, key: string): Promise<Note> {
    const response = await this.fetch('/api/notes', {
      method: 'POST',
      headers: { ...(await this.auth(user)), 'idempotency-key': `"${key}"` },
      body: JSON.stringify({ title }),
    });
    if (response.status !== 201)
      throw new Error(`create failed: ${response.status} ${await response.text()}`);
    return (await response.json()) as Note;
  }
}
