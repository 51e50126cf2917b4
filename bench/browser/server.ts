import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EffectStats } from '../../e2e/support/server.ts';
import { treeCpuMs } from './cpu.ts';

/**
 * The reference server as the browser bench uses it: its own process (`server/cli.ts` through
 * tsx, as `bench/server.ts` runs it), SQLite in a temp dir with the default durability, admin
 * routes on for fault injection and the effects counter, and `dist/bench` as its static root so
 * the bench page, both workers and the API share one loopback origin.
 */
export class BenchServer {
  readonly #tokens = new Map<string, string>();

  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  static async start(root: string): Promise<BenchServer> {
    const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-bench-db-'));
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'server/cli.ts',
        '--port',
        '0',
        '--db',
        join(dir, 'bench.db'),
        '--admin',
        '--static',
        'dist/bench',
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        const timer = setTimeout(
          () => reject(new Error(`server did not start:\n${stderr}`)),
          30_000,
        );
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
      return new BenchServer(url, child, dir);
    } catch (error) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** CPU ms this server process used so far (undefined without /proc). */
  cpuMs(): number | undefined {
    return treeCpuMs(this.child.pid);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A demo bearer token for `user` (the user becomes the ledger's principal). */
  async token(user: string): Promise<string> {
    let token = this.#tokens.get(user);
    if (token === undefined) {
      const response = await this.#fetch('/auth/login', {
        method: 'POST',
        body: JSON.stringify({ user }),
      });
      if (!response.ok) throw new Error(`login failed: ${response.status}`);
      token = ((await response.json()) as { token: string }).token;
      this.#tokens.set(user, token);
    }
    return token;
  }

  /** This process's counters for one user: committed writes (effects), replays, per key. */
  async stats(user: string): Promise<EffectStats> {
    const response = await this.#fetch(`/__stats?user=${encodeURIComponent(user)}`);
    return ((await response.json()) as { process: EffectStats }).process;
  }

  /** Adds a fault rule (server/faults.ts), e.g. a delay or a response drop after commit. */
  async fault(rule: Record<string, unknown>): Promise<void> {
    const response = await this.#fetch('/__faults', { method: 'POST', body: JSON.stringify(rule) });
    if (!response.ok) throw new Error(`fault rejected: ${await response.text()}`);
  }

  async clearFaults(): Promise<void> {
    await this.#fetch('/__faults', { method: 'DELETE' });
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
