import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PrincipalStats } from '../../server/stats.ts';

/** The server's counters for one user (`GET /__stats?user=`). */
export type EffectStats = PrincipalStats;

/** How to start one reference-server process for a test or a benchmark. */
export interface LaunchOptions {
  /** Node arguments before the server's own (`['server/dist/cli.js']`, `['scripts/start.mjs']`, …). */
  command: string[];
  /** Arguments after `--db <temp file>`. */
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Temp-dir prefix, also the database file's name. */
  label: string;
  timeoutMs: number;
}

/**
 * A reference server in its own process, on a free loopback port with a throwaway SQLite file,
 * and the admin routes the e2e suites and benchmarks read: demo tokens, fault rules, `/__stats`.
 * The e2e server, the demo server and the bench server differ only in how they are started.
 */
export class ServerProcess {
  readonly #tokens = new Map<string, string>();

  protected constructor(
    readonly url: string,
    protected readonly child: ChildProcess,
    private readonly dir: string,
  ) {}

  /** Starts the process and resolves once it printed `listening on http://127.0.0.1:<port>`. */
  protected static async launch(
    options: LaunchOptions,
  ): Promise<{ url: string; child: ChildProcess; dir: string }> {
    const dir = mkdtempSync(join(tmpdir(), `sw-outbox-${options.label}-`));
    const child = spawn(
      process.execPath,
      [...options.command, '--db', join(dir, `${options.label}.db`), ...(options.args ?? [])],
      { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stdout = '';
        const timer = setTimeout(
          () => reject(new Error(`server did not listen:\n${stderr}`)),
          options.timeoutMs,
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
          reject(new Error(`server exited with ${code}:\n${stderr}`));
        });
      });
      return { url, child, dir };
    } catch (error) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
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
      const response = await this.fetch('/auth/login', {
        method: 'POST',
        body: JSON.stringify({ user }),
      });
      if (!response.ok) throw new Error(`login failed: ${response.status}`);
      token = ((await response.json()) as { token: string }).token;
      this.#tokens.set(user, token);
    }
    return token;
  }

  /** Forgets a cached token (after the server expired it). */
  protected forgetToken(user: string): void {
    this.#tokens.delete(user);
  }

  /** This process's counters for one user: committed writes (effects), replays, per key. */
  async stats(user: string): Promise<EffectStats> {
    const response = await this.fetch(`/__stats?user=${encodeURIComponent(user)}`);
    return ((await response.json()) as { process: EffectStats }).process;
  }

  /** Adds a fault rule (see server/faults.ts). */
  async fault(rule: Record<string, unknown>): Promise<void> {
    const response = await this.fetch('/__faults', { method: 'POST', body: JSON.stringify(rule) });
    if (!response.ok) throw new Error(`fault rejected: ${await response.text()}`);
  }

  /** Removes every fault rule, or only those of `user` (tests sharing a server use their own). */
  async clearFaults(user?: string): Promise<void> {
    const query = user === undefined ? '' : `?user=${encodeURIComponent(user)}`;
    await this.fetch(`/__faults${query}`, { method: 'DELETE' });
  }

  protected async auth(user: string): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.token(user)}` };
  }

  protected fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const json: Record<string, string> =
      init.body === undefined ? {} : { 'content-type': 'application/json' };
    return fetch(`${this.url}${path}`, {
      ...init,
      headers: { ...json, ...(init.headers as Record<string, string>) },
    });
  }
}
