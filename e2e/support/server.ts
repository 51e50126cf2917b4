import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The reference server as the e2e suite uses it: started from the build on a free port with a
 * temporary SQLite file, admin routes on (faults, `/__stats`) and the e2e bundles as static
 * files, so pages, worker and API share one origin.
 */

export interface EffectStats {
  effects: number;
  replays: number;
  inProgress: number;
  conflicts: number;
  keyReused: number;
  effectsByKey: Record<string, number>;
}

export interface Note {
  id: string;
  revision: number;
  title: string;
  body?: string;
  deleted?: boolean;
}

export class ReferenceServer {
  readonly #tokens = new Map<string, string>();

  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  static async start(): Promise<ReferenceServer> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-e2e-'));
    const child = spawn(
      process.execPath,
      [
        'dist/server/cli.js',
        '--port',
        '0',
        '--db',
        join(dir, 'e2e.db'),
        '--admin',
        '--static',
        'dist/e2e',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 15_000);
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${stderr}`)));
    });
    return new ReferenceServer(url, child, dir);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async token(user: string): Promise<string> {
    let token = this.#tokens.get(user);
    if (token === undefined) {
      const response = await this.#fetch('/auth/login', {
        method: 'POST',
        body: JSON.stringify({ user }),
      });
      token = ((await response.json()) as { token: string }).token;
      this.#tokens.set(user, token);
    }
    return token;
  }

  /** This server's counters for one user: committed writes (effects) per idempotency key. */
  async stats(user: string): Promise<EffectStats> {
    const response = await this.#fetch(`/__stats?user=${encodeURIComponent(user)}`);
    return ((await response.json()) as { process: EffectStats }).process;
  }

  /** Adds a fault rule (see server/faults.ts). */
  async fault(rule: Record<string, unknown>): Promise<void> {
    const response = await this.#fetch('/__faults', { method: 'POST', body: JSON.stringify(rule) });
    if (!response.ok) throw new Error(`fault rejected: ${await response.text()}`);
  }

  async clearFaults(): Promise<void> {
    await this.#fetch('/__faults', { method: 'DELETE' });
  }

  /** Opens a 401 window: tokens issued so far are rejected until the user logs in again. */
  async expireToken(user: string): Promise<void> {
    await this.#fetch('/__faults/expire-token', { method: 'POST', body: JSON.stringify({ user }) });
    this.#tokens.delete(user);
  }

  async notes(user: string): Promise<Note[]> {
    const response = await this.#fetch('/api/notes', { headers: await this.#auth(user) });
    return ((await response.json()) as { items: Note[] }).items;
  }

  async note(user: string, id: string): Promise<Note | undefined> {
    const response = await this.#fetch(`/api/notes/${encodeURIComponent(id)}`, {
      headers: await this.#auth(user),
    });
    return response.ok ? ((await response.json()) as Note) : undefined;
  }

  /** Creates a note directly (not through an outbox), for tests that edit an existing record. */
  async createNote(user: string, title: string, key: string): Promise<Note> {
    const response = await this.#fetch('/api/notes', {
      method: 'POST',
      headers: { ...(await this.#auth(user)), 'idempotency-key': `"${key}"` },
      body: JSON.stringify({ title }),
    });
    if (response.status !== 201)
      throw new Error(`create failed: ${response.status} ${await response.text()}`);
    return (await response.json()) as Note;
  }

  async #auth(user: string): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.token(user)}` };
  }

  #fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const json: Record<string, string> =
      init.body === undefined ? {} : { 'content-type': 'application/json' };
    return fetch(`${this.url}${path}`, {
      ...init,
      headers: { ...json, ...(init.headers as Record<string, string>) },
    });
  }
}
