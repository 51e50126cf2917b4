import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The two processes the Vite example runs on, started as their users start them: the todo API
 * of examples/hono-sqlite (`npm start`, on the workspace's built server kit) and the example's
 * own Vite — `vite` (dev) or `vite preview` of its build — from .tmp/examples/vite-pwa, where
 * scripts/example.mjs installed it from the packed tarball.
 */

export const ROOT = join(import.meta.dirname, '..', '..');
export const EXAMPLE = join(ROOT, '.tmp', 'examples', 'vite-pwa');
export const API_EXAMPLE = join(ROOT, 'examples', 'hono-sqlite');
export const USER = 'alice';

/** A todo as the API lists it. */
export interface Todo {
  id: string;
  revision: number;
  title: string;
  done: boolean;
}

/** A process in its own group (npm, tsx and the app stop together), with what it printed. */
class Running {
  #output = '';
  constructor(readonly child: ChildProcess) {
    for (const stream of [child.stdout, child.stderr]) {
      stream?.on('data', (chunk: Buffer) => {
        this.#output += chunk.toString();
      });
    }
  }

  get output(): string {
    return this.#output;
  }

  /** Resolves with the first match of `pattern` in what it prints; rejects if it exits first. */
  waitFor(pattern: RegExp, label: string, timeoutMs: number): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error(`${label}: no ${pattern} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const check = () => {
        const match = pattern.exec(this.#output);
        if (match) done(undefined, match);
      };
      const exited = (code: number | null) => done(new Error(`${label} exited with ${code}`));
      const done = (error?: Error, match?: RegExpExecArray) => {
        clearTimeout(timer);
        this.child.stdout?.off('data', check);
        this.child.off('exit', exited);
        if (match) resolve(match);
        else reject(new Error(`${error?.message}:\n${this.#output}`));
      };
      this.child.stdout?.on('data', check);
      this.child.once('exit', exited);
      check();
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    process.kill(-this.child.pid!, 'SIGTERM');
    await exited;
  }
}

function start(command: string, args: string[], cwd: string, env: Record<string, string>) {
  return new Running(
    spawn(command, args, {
      cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    }),
  );
}

/** The todo API with a throwaway database; reads go through its own routes, as Alice. */
export class TodoApi {
  private constructor(
    readonly url: string,
    private readonly running: Running,
    private readonly dir: string,
  ) {}

  static async start(): Promise<TodoApi> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-todos-'));
    const running = start('npm', ['start'], API_EXAMPLE, {
      PORT: '0',
      DB_PATH: join(dir, 'todos.db'),
    });
    const [, url] = await running.waitFor(
      /listening on (http:\/\/127\.0\.0\.1:\d+)/,
      'the todo API',
      30_000,
    );
    return new TodoApi(url!, running, dir);
  }

  get(path: string): Promise<Response> {
    return fetch(new URL(path, this.url), { headers: { authorization: `Bearer ${USER}` } });
  }

  /** The todos the server lists now, in its order. */
  async todos(): Promise<Todo[]> {
    return (await (await this.get('/api/todos')).json()) as Todo[];
  }

  /**
   * The versions a write replaced, oldest first (SPEC §10.1): each names the idempotency key of
   * the write that replaced it, so one version per applied write.
   */
  async replaced(
    id: string,
    upTo: number,
  ): Promise<Array<{ revision: number; supersededBy: string }>> {
    const versions = [];
    for (let revision = 1; revision <= upTo; revision++) {
      const response = await this.get(`/api/todos/${encodeURIComponent(id)}/history/${revision}`);
      if (response.status === 404) continue;
      const version = (await response.json()) as { revision: number; supersededBy: string | null };
      // The current version is listed too, replaced by nothing (yet).
      if (version.supersededBy !== null)
        versions.push({ ...version, supersededBy: version.supersededBy });
    }
    return versions;
  }

  async stop(): Promise<void> {
    await this.running.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A free loopback port (Vite wants a port of its own, not 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * The example's Vite: `vite` (dev mode) or `vite preview` (its build), proxying /api to `api`;
 * `config` is another config file in the example's folder.
 */
export class ExampleApp {
  private constructor(
    readonly url: string,
    private readonly running: Running,
  ) {}

  static async start(mode: 'dev' | 'build', api: TodoApi, config?: string): Promise<ExampleApp> {
    const port = await freePort();
    const vite = join(EXAMPLE, 'node_modules', '.bin', 'vite');
    const args = [...(mode === 'dev' ? [] : ['preview']), ...(config ? ['--config', config] : [])];
    const running = start(
      vite,
      [...args, '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
      EXAMPLE,
      { API_URL: api.url },
    );
    await running.waitFor(new RegExp(`http://127\\.0\\.0\\.1:${port}/`), `vite (${mode})`, 60_000);
    return new ExampleApp(`http://127.0.0.1:${port}/`, running);
  }

  get output(): string {
    return this.running.output;
  }

  stop(): Promise<void> {
    return this.running.stop();
  }
}
