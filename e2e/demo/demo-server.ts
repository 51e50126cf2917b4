import type { Note } from '../support/server.ts';
import { ServerProcess } from '../support/server-process.ts';

/**
 * The demo exactly as `npm start` runs it (scripts/start.mjs: build when stale, reference server
 * with admin routes serving dist/demo), on a free port with a throwaway SQLite file. The test
 * reads the server's side of the story — effects per idempotency key, the stored notes — over
 * HTTP, the way the demo page itself does.
 */
export class DemoServer extends ServerProcess {
  static async start(): Promise<DemoServer> {
    const { url, child, dir } = await ServerProcess.launch({
      command: ['scripts/start.mjs'],
      env: { ...process.env, PORT: '0' },
      label: 'demo',
      // The first start may build the demo (a few seconds on two cores).
      timeoutMs: 90_000,
    });
    return new DemoServer(url, child, dir);
  }

  /** Ends the demo's "offline" for `user` with no tab open: its open-ended 503 rule goes. */
  async goOnline(user: string): Promise<void> {
    const { rules } = (await (await this.fetch('/__faults')).json()) as {
      rules: Array<{ id: number; kind: string; user?: string; count?: number }>;
    };
    const offline = rules.filter(
      (rule) => rule.user === user && rule.kind === 'unavailable' && rule.count === undefined,
    );
    for (const rule of offline) await this.fetch(`/__faults/${rule.id}`, { method: 'DELETE' });
  }

  /** The user's live notes, read with the server's own token for the user (a second "device"). */
  async notes(user: string): Promise<Note[]> {
    const response = await this.fetch('/api/notes', { headers: await this.auth(user) });
    return ((await response.json()) as { items: Note[] }).items.filter((note) => !note.deleted);
  }
}
