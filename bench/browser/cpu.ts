import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of process trees from /proc (Linux), so a rate measured on a busy machine can be read
 * as CPU cost per row as well. Undefined where /proc is missing.
 */

const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime, ms. */
  cpuMs: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { pid, ppid: Number(fields[1]), cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

function allStats(): ProcStat[] {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return [];
  }
  return pids.map(readStat).filter((stat): stat is ProcStat => stat !== undefined);
}

/** The Chromium browser process started on `profileDir` (the one without `--type=`). */
export function browserPid(profileDir: string): number | undefined {
  for (const { pid } of allStats()) {
    try {
      // Chromium rewrites its children's titles into one space-separated string.
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
      if (
        args.includes(`--user-data-dir=${profileDir}`) &&
        !args.some((arg) => arg.startsWith('--type='))
      )
        return pid;
    } catch {
      // The process ended meanwhile.
    }
  }
  return undefined;
}

/** CPU ms used so far by `root` and every live descendant. */
export function treeCpuMs(root: number | undefined): number | undefined {
  if (root === undefined) return undefined;
  const stats = allStats();
  if (stats.length === 0) return undefined;
  const children = new Map<number, ProcStat[]>();
  for (const stat of stats) {
    const list = children.get(stat.ppid) ?? [];
    list.push(stat);
    children.set(stat.ppid, list);
  }
  const rootStat = stats.find((stat) => stat.pid === root);
  if (rootStat === undefined) return undefined;
  let total = 0;
  const queue = [rootStat];
  while (queue.length > 0) {
    const stat = queue.pop()!;
    total += stat.cpuMs;
    queue.push(...(children.get(stat.pid) ?? []));
  }
  return total;
}
