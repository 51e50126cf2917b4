import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page, type Worker } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../e2e/support/chromium.ts';
import { PING_MESSAGE } from '../../shared/model/connection.ts';
import type { BenchPageApi, OutboxWorkerHooks, WorkboxWorkerHooks } from './app/protocol.ts';
import { browserPid, type ThreadTimes, treeCpuMs, treeThreadTimes } from './cpu.ts';

/**
 * One measurement's browser: headless Chromium on a fresh persistent profile (TOOLING: contexts
 * from `newContext()` keep IndexedDB in memory, so durability would cost nothing), the bench
 * page open and its worker in control. The profile directory is removed afterwards.
 *
 * Playwright inspects a service worker's network traffic by default: every fetch the worker makes
 * is reported over the DevTools protocol, which measured here roughly triples the browser's CPU
 * per request (a worker's sequential POSTs: 188/s inspected, 536/s not). Throughput runs turn it
 * off; only runs that need `context.setOffline` to reach the worker keep it on.
 */

export interface Profile {
  context: BrowserContext;
  page: Page;
  /** Calls a method of `window.bench` in the page. */
  call<R>(run: (bench: BenchPageApi, arg: never) => R | Promise<R>, arg?: unknown): Promise<R>;
  /** CPU ms used so far by every process of this browser (undefined without /proc). */
  cpuMs(): number | undefined;
  /** Every thread of this browser with its run and run-queue wait time so far (empty without /proc). */
  threads(): ThreadTimes[];
}

export interface ProfileOptions {
  /** Keep Playwright's network inspection of the worker, so `setOffline` reaches its fetches. */
  offlineCapable?: boolean;
}

const NO_WORKER_NETWORK = 'PLAYWRIGHT_DISABLE_SERVICE_WORKER_NETWORK';

export async function withProfile<T>(
  baseUrl: string,
  work: (profile: Profile) => Promise<T>,
  options: ProfileOptions = {},
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-bench-profile-'));
  // Read by Playwright when it attaches to a worker: set for this profile's whole life.
  if (options.offlineCapable) delete process.env[NO_WORKER_NETWORK];
  else process.env[NO_WORKER_NETWORK] = '1';
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${baseUrl}/`);
    await page.waitForFunction(() => 'bench' in globalThis);
    const call: Profile['call'] = (run, arg) =>
      page.evaluate(
        ([source, value]) => {
          const fn = new Function(`return (${source})`)() as (b: unknown, a: unknown) => unknown;
          return fn((globalThis as unknown as { bench: unknown }).bench, value);
        },
        [run.toString(), arg] as const,
      ) as Promise<never>;
    const pid = browserPid(dir);
    return await work({
      context,
      page,
      call,
      cpuMs: () => treeCpuMs(pid),
      threads: () => treeThreadTimes(pid),
    });
  } finally {
    await context.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The running service worker of the profile (after the page connected to it). */
export async function serviceWorker(context: BrowserContext): Promise<Worker> {
  return context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
}

/**
 * Posts the page's worker a ping (SPEC §13.1): an event, which restarts the browser's idle clock
 * of the worker before a long call of hooks.
 */
export async function wakeWorker(page: Page): Promise<void> {
  await page.evaluate(async (type) => {
    const { port1, port2 } = new MessageChannel();
    const pong = new Promise((resolve) => {
      port1.onmessage = resolve;
    });
    const worker =
      navigator.serviceWorker.controller ?? (await navigator.serviceWorker.ready).active;
    worker?.postMessage({ type }, [port2]);
    await pong;
    port1.close();
  }, PING_MESSAGE);
}

/** Calls a hook of the outbox worker's `self.bench`. */
export function outboxHooks<R>(
  worker: Worker,
  run: (hooks: OutboxWorkerHooks, arg: never) => Promise<R>,
  arg?: unknown,
): Promise<R> {
  return callHooks(worker, run, arg);
}

/** Calls a hook of the Workbox worker's `self.bench`. */
export function workboxHooks<R>(
  worker: Worker,
  run: (hooks: WorkboxWorkerHooks, arg: never) => Promise<R>,
  arg?: unknown,
): Promise<R> {
  return callHooks(worker, run, arg);
}

function callHooks<R>(worker: Worker, run: (hooks: never, arg: never) => unknown, arg: unknown) {
  return worker.evaluate(
    ([source, value]) => {
      const fn = new Function(`return (${source})`)() as (h: unknown, a: unknown) => unknown;
      return fn((globalThis as unknown as { bench: unknown }).bench, value);
    },
    [run.toString(), arg] as const,
  ) as Promise<R>;
}
