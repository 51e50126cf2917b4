import { ServerProcess } from '../../e2e/support/server-process.ts';
import { type ThreadTimes, treeCpuMs, treeThreadTimes } from './cpu.ts';

/**
 * The reference server as the browser bench uses it: its own process (`server/cli.ts` through
 * tsx, as `bench/server.ts` runs it), SQLite in a temp dir with the default durability, admin
 * routes on for fault injection and the effects counter, and `dist/bench` as its static root so
 * the bench page, both workers and the API share one loopback origin.
 */
export class BenchServer extends ServerProcess {
  static async start(root: string): Promise<BenchServer> {
    const { url, child, dir } = await ServerProcess.launch({
      command: ['--import', 'tsx', 'server/cli.ts', '--port', '0'],
      args: ['--admin', '--static', 'dist/bench'],
      cwd: root,
      label: 'bench',
      timeoutMs: 30_000,
    });
    return new BenchServer(url, child, dir);
  }

  /** CPU ms this server process used so far (undefined without /proc). */
  cpuMs(): number | undefined {
    return treeCpuMs(this.child.pid);
  }

  /** This server's threads with their run and run-queue wait time so far. */
  threads(): ThreadTimes[] {
    return treeThreadTimes(this.child.pid, 'server');
  }
}
