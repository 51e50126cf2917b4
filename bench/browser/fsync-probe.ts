import { open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile } from './stats.ts';

/**
 * A witness of the disk while a run goes on: a 4 KB write and `fdatasync` every `intervalMs` to
 * a file beside the browser profiles (the same file system), each timed. A strict IndexedDB
 * commit waits for the same kind of sync, so its tail cannot be shorter than the disk's.
 */
export interface FsyncSummary {
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export async function startFsyncProbe(intervalMs = 50): Promise<() => Promise<FsyncSummary>> {
  const path = join(tmpdir(), `sw-outbox-bench-fsync-${process.pid}`);
  const file = await open(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await file.write(block, 0, block.length, 0);
      await file.datasync();
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return async () => {
    running = false;
    await loop;
    await file.close();
    await rm(path, { force: true });
    return {
      count: times.length,
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      maxMs: Math.round(Math.max(...times) * 100) / 100,
    };
  };
}
