import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** A reference server in its own process, so the load generator never shares its event loop. */
export interface ServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `server/cli.ts` on 127.0.0.1 and a free port and waits for its listening line. */
export function startServerProcess(args: readonly string[]): Promise<ServerProcess> {
  return startScriptProcess('server/cli.ts', ['--port', '0', '--admin', ...args]);
}

/**
 * Starts `node [nodeArgs] --import tsx <script>` (a path from the repository's root, or absolute)
 * in `cwd` (the repository's root by default) and waits for its
 * `listening on http://127.0.0.1:<port>` line.
 */
export async function startScriptProcess(
  script: string,
  args: readonly string[],
  env: Record<string, string> = {},
  { nodeArgs = [], cwd = ROOT }: { nodeArgs?: readonly string[]; cwd?: string } = {},
): Promise<ServerProcess> {
  const argv = [...nodeArgs, '--import', 'tsx', resolve(ROOT, script), ...args];
  const child = spawn(process.execPath, argv, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: '', ...env },
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { url, child, stop };
}

/** utime + stime of a process in milliseconds (Linux /proc, 100 ticks per second). */
export function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU of every local `postgres` process, in milliseconds. */
export function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') {
        total += processCpuMs(Number(entry));
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return total;
}

/** Whether PostgreSQL answers at `url` within two seconds. */
export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Drops a bench schema and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A connection string without its credentials, for messages. */
export function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//…@');
}
