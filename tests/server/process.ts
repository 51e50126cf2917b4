import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A `server/cli.ts` child process, as `npm run server` starts it. */
export interface ServerChild {
  url: string;
  /** Everything the process printed on stdout so far. */
  stdout(): string;
  child: ChildProcess;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `node --import tsx server/cli.ts <args>` and waits for its listening line. */
export function spawnServer(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ServerChild> {
  return spawnScript('server/cli.ts', args, env);
}

/**
 * Starts `node --import tsx <script> <args>` (a path from the repository's root) and waits for
 * its `listening on http://127.0.0.1:<port>` line.
 */
export async function spawnScript(
  script: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ServerChild> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: '', PORT: '', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(stdout);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    child,
    stdout: () => stdout,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}
