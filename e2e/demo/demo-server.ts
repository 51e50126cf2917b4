import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EffectStats, Note } from '../support/server.ts';

/**
 * The demo exactly as `npm start` runs it (scripts/start.mjs: build when stale, reference server
 * with admin routes serving dist/demo), on a free port with a throwaway SQLite file. The test
 * reads the server's side of the story — effects per idempotency key, the stored notes — over
 * HTTP, the way the demo page itself does.
 */
export class DemoServer {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  static async start(): Promise<DemoServer> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-demo-'));
    const child = spawn(process.execPath, ['scripts/start.mjs', '--db', join(dir, 'demo.db')], {
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      // The first start may build the demo (a few seconds on two cores).
      const timer = setTimeout(
        () => reject(new Error(`npm start did not listen:\n${stderr}`)),
        90_000,
      );
      child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`npm start exited with ${code}:\n${stderr}`));
      });
    });
    return new DemoServer(url, child, dir);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The server's counters for one user: committed writes (effects) per idempotency key. */
  async stats(user: string): Promise<EffectStats> {
    const response = await fetch(`${this.url}/__stats?user=${encodeURIComponent(user)}`);
    return ((await response.json()) as { process: EffectStats }).process;
  }

  /** Ends the demo's "offline" for `user` with no tab open: its open-ended 503 rule goes. */
  async goOnline(user: string): Promise<void> {
    const { rules } = (await (await fetch(`${this.url}/__faults`)).json()) as {
      rules: Array<{ id: number; kind: string; user?: string; count?: number }>;
    };
    const offline = rules.filter(
      (rule) => rule.user === user && rule.kind === 'unavailable' && rule.count === undefined,
    );
    for (const rule of offline)
      await fetch(`${this.url}/__faults/${rule.id}`, { method: 'DELETE' });
  }

  /** The user's live notes, read with a token of its own (a second "device"). */
  async notes(user: string): Promise<Note[]> {
    const login = await fetch(`${this.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user }),
    });
    const { token } = (await login.json()) as { token: string };
    const response = await fetch(`${this.url}/api/notes`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return ((await response.json()) as { items: Note[] }).items.filter((note) => !note.deleted);
  }
}
