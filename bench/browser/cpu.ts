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

/** One thread's scheduler times (`/proc/<pid>/task/<tid>/schedstat`), ms. */
export interface ThreadTimes {
  /** `<process kind>/<thread name>`: `renderer/ServiceWorker t`, `browser/CrBrowserMain`, … */
  group: string;
  tid: number;
  /** Time on a CPU. */
  runMs: number;
  /** Time runnable but waiting for a CPU: what contention costs this thread. */
  waitMs: number;
}

/** Chromium's process kind from its command line (`--type=`, the network service apart). */
function processKind(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
    const type = args.find((arg) => arg.startsWith('--type='))?.slice('--type='.length);
    if (type === undefined) return 'browser';
    const sub = args.find((arg) => arg.startsWith('--utility-sub-type='));
    if (sub?.includes('network')) return 'network';
    if (sub?.includes('storage')) return 'storage';
    return type;
  } catch {
    return 'gone';
  }
}

/** Every thread of `root`'s process tree with its scheduler times; `label` names the root's kind. */
export function treeThreadTimes(root: number | undefined, label?: string): ThreadTimes[] {
  if (root === undefined) return [];
  const stats = allStats();
  const children = new Map<number, number[]>();
  for (const stat of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat.pid]);
  const out: ThreadTimes[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop()!;
    queue.push(...(children.get(pid) ?? []));
    const kind = pid === root && label !== undefined ? label : processKind(pid);
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')
          .split(' ')
          .map(Number);
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
        out.push({
          group: `${kind}/${name}`,
          tid: Number(tid),
          runMs: run! / 1e6,
          waitMs: wait! / 1e6,
        });
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return out;
}

/** Per group of threads: run and wait time between two readings, ms, largest run first. */
export function threadTimesSince(
  before: ThreadTimes[],
  after: ThreadTimes[],
): Array<{ group: string; runMs: number; waitMs: number }> {
  const start = new Map(before.map((t) => [t.tid, t]));
  const groups = new Map<string, { runMs: number; waitMs: number }>();
  for (const t of after) {
    const from = start.get(t.tid);
    const sum = groups.get(t.group) ?? { runMs: 0, waitMs: 0 };
    sum.runMs += t.runMs - (from?.runMs ?? 0);
    sum.waitMs += t.waitMs - (from?.waitMs ?? 0);
    groups.set(t.group, sum);
  }
  return [...groups].map(([group, t]) => ({ group, ...t })).sort((a, b) => b.runMs - a.runMs);
}

/**
 * Where browser CPU went, by thread, ms: the browser process's thread pool (where Chromium's
 * IndexedDB backend and its LevelDB run), the service worker's own thread (the engine's
 * JavaScript and the IndexedDB and fetch calls it makes), the rest of the worker's renderer (its
 * I/O thread carries the IPC, its pool the serialization helpers and GC), the rest of the
 * browser process (its I/O thread routes IPC and network), and every other process.
 */
export interface CpuSplit {
  backend: number;
  worker: number;
  renderer: number;
  browser: number;
  other: number;
}

export const CPU_SPLIT_KEYS: ReadonlyArray<keyof CpuSplit> = [
  'backend',
  'worker',
  'renderer',
  'browser',
  'other',
];

/** Thread groups of {@link threadTimesSince} summed into a {@link CpuSplit}, per `rows` rows. */
export function cpuSplit(
  groups: ReadonlyArray<{ group: string; runMs: number }>,
  rows: number,
): CpuSplit {
  const split: CpuSplit = { backend: 0, worker: 0, renderer: 0, browser: 0, other: 0 };
  for (const { group, runMs } of groups) {
    const key: keyof CpuSplit = group.startsWith('browser/ThreadPool')
      ? 'backend'
      : group === 'renderer/ServiceWorker t'
        ? 'worker'
        : group.startsWith('renderer/')
          ? 'renderer'
          : group.startsWith('browser/')
            ? 'browser'
            : 'other';
    split[key] += runMs;
  }
  for (const key of CPU_SPLIT_KEYS) split[key] = Math.round((split[key] / rows) * 1000) / 1000;
  return split;
}
