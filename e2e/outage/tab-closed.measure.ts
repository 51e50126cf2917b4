import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BrowserContext } from '@playwright/test';
import puppeteer, { type Browser as PuppeteerBrowser } from 'puppeteer-core';
import type { AppPage } from '../support/app-page.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium.ts';
import { expect, test } from '../support/fixtures.ts';
import { type E2eWindow, type Evaluate, OutboxTab } from '../support/outbox-tab.ts';
import { fromWorker, ReferenceServer } from '../support/server.ts';
import { ServerProcess } from '../support/server-process.ts';
import { workerEvents } from '../support/worker-events.ts';

/**
 * What sends an edit in Chromium after a server outage with every tab closed (SPEC §12, §21; the
 * README's browser table). The network stays up: the server answers 503 to every write, or its
 * process is gone and connections are refused. An edit made then fails at once, and so does the
 * Background Sync its enqueue registered (it fires within seconds, the network being up); the
 * tab closes and the worker is stopped, as the browser stops an idle one; the server comes back
 * while nothing runs. Then the measurement waits, with no page open, and records when the edit
 * was applied, what started the worker that sent it, and every worker start on the way — or,
 * in the next-visit scenario, what a page opened again does.
 *
 * Playwright's DevTools keep a worker they are attached to running, so in these scenarios the
 * monitor stops it: right after the tab closes, and 30 s after each later start (Chromium's idle
 * rule). The scenarios after them leave the worker to Chromium alone (puppeteer-core, not
 * attached to it) and measure how long its own backoff timer lives. Times are seconds, each from
 * the enqueue's failed sync unless named otherwise. Results go to the report's annotations and
 * to `bench/results/outage/<scenario>.json`.
 *
 * Run: `npm run measure:outage` (about 25 minutes; the scenarios run side by side and mostly
 * wait). One scenario: `npm run measure:outage -- -g "503, back after 1 min"` (about 5 minutes).
 */

const seconds = (name: string, fallback: number) => Number(process.env[name] ?? fallback) * 1000;
/** The short outage: the server is back this long after the worker stopped. */
const RECOVER_MS = seconds('OUTAGE_RECOVER_S', 60);
/** The long outage, past the browser's first retry. */
const LONG_RECOVER_MS = seconds('OUTAGE_LONG_S', 480);
/** The longest outage: past the browser's last retry (its third sync, about 20 min on). */
const LAST_RECOVER_MS = seconds('OUTAGE_LAST_S', 21 * 60);
/** In the next-visit scenarios, when the user opens the app again after the server is back. */
const REOPEN_MS = seconds('OUTAGE_REOPEN_S', 60);
/** How long to wait for the edit, from the worker's stop, before opening the app again. */
const CAP_MS = seconds('OUTAGE_CAP_S', 25 * 60);
/** Chromium stops an idle worker about 30 s after its last event. */
const IDLE_STOP_MS = 30_000;
const RESULTS = join('bench', 'results', 'outage');

test.describe.configure({ timeout: CAP_MS + 5 * 60_000 });

interface Scenario {
  name: string;
  fault: '503' | 'refused';
  recoverAfterMs: number;
  reopenAfterMs?: number;
}

const SCENARIOS: Scenario[] = [
  { name: '503, back after 1 min', fault: '503', recoverAfterMs: RECOVER_MS },
  { name: 'refused, back after 1 min', fault: 'refused', recoverAfterMs: RECOVER_MS },
  { name: '503 past the first retry', fault: '503', recoverAfterMs: LONG_RECOVER_MS },
  {
    name: '503 past the last retry, app opened again',
    fault: '503',
    recoverAfterMs: LAST_RECOVER_MS,
    reopenAfterMs: 2 * REOPEN_MS,
  },
  {
    name: '503, app opened again',
    fault: '503',
    recoverAfterMs: RECOVER_MS,
    reopenAfterMs: REOPEN_MS,
  },
];

for (const scenario of SCENARIOS) {
  test(`tab closed through a server outage (${scenario.name}): when the edit goes and what sends it`, async ({
    context,
    openApp,
    server,
    user,
  }) => {
    const result = await measure(scenario, { context, openApp, server, user });
    report(scenario.name, result.summary, result);
    // Whatever sent it, the edit was applied, once.
    expect(result.effects).toBe(1);
  });
}

/**
 * The same outage in a Chromium whose DevTools are not attached to the worker (puppeteer-core,
 * which can leave a target alone), so Chromium stops it by its own rules: how long its backoff
 * timer kept retrying after the tab closed, when the browser stopped it, and what sent the edit.
 * The server is back 1 min after the tab closed, while the worker still runs (answering 503 with
 * `Retry-After: 1`, or refusing connections, where the engine's own backoff paces the worker);
 * or only once the browser has stopped the worker, and 20 s more (at most 10 minutes after the
 * tab closed). No
 * code runs in this worker from outside: its tries are read at the server, the browser's syncs
 * in its Background Sync log.
 */
const UNATTACHED = [
  { fault: '503', early: true },
  { fault: '503', early: false },
  { fault: 'refused', early: true },
] as const;

for (const { fault, early } of UNATTACHED) {
  const name = `${fault}, no DevTools on the worker, back ${early ? 'after 1 min' : 'after the browser stopped the worker'}`;
  test(`tab closed through a server outage (${name}): how long the worker retries on its own, then what sends the edit`, async ({
    server,
    user,
  }) => {
    const browser = await puppeteer.launch({
      executablePath: CHROMIUM_PATH,
      args: CHROMIUM_ARGS,
      headless: true,
      targetFilter: (target) => target.type() !== 'service_worker',
    });
    try {
      const result = await measureUnattached(browser, server, user, fault, early);
      report(name, result.summary, result);
      expect(result.effects).toBe(1);
    } finally {
      await server.clearFaults(user);
      await browser.close();
    }
  });
}

async function measureUnattached(
  browser: PuppeteerBrowser,
  shared: ReferenceServer,
  user: string,
  fault: '503' | 'refused',
  early: boolean,
) {
  let server: ReferenceServer =
    fault === 'refused' ? await PortServer.listen(await freePort()) : shared;
  try {
    return await unattached(browser, shared, user, fault, early, server, (next) => {
      server = next;
    });
  } finally {
    if (server !== shared) await server.stop();
  }
}

async function unattached(
  browser: PuppeteerBrowser,
  shared: ReferenceServer,
  user: string,
  fault: '503' | 'refused',
  early: boolean,
  first: ReferenceServer,
  restarted: (server: ReferenceServer) => void,
) {
  let server = first;
  const url = server.url;
  const page = await browser.newPage();
  await page.goto(`${url}/app/`);
  const tab = new OutboxTab(page.evaluate.bind(page) as unknown as Evaluate);
  // The engine's own backoff (base 1 s, cap 5 min): how often a real worker retries meanwhile.
  await tab.start({ owner: user, login: { user, persist: true }, sw: { backoff: 'default' } });
  const watcher = await browser.newPage();
  const cdp = await watcher.createCDPSession();
  const monitor = await Monitor.over({
    send: (method, params) => cdp.send(method as never, params as never),
    on: (event, handler) => cdp.on(event as never, handler as never),
  });

  if (fault === '503') await unavailable(shared, user);
  else await server.stop();
  const enqueuedAt = Date.now();
  const id = await tab.createNote('made during the outage');
  // The page hears the worker's events (e2e/app/page.ts): the enqueue's sync failed.
  const failedAt = await poll(async () => {
    const heard = await tab.evaluate(
      () => (globalThis as unknown as E2eWindow).e2e.events as Array<{ type: string; at: number }>,
      undefined,
    );
    return heard.find((event) => event.type === 'sync_retry')?.at;
  }, 60_000);
  await page.close();
  const closedAt = Date.now();

  let stoppedAt: number | undefined;
  let recoveredAt: number | undefined;
  let appliedAt: number | undefined;
  while (Date.now() - failedAt < CAP_MS) {
    const now = Date.now();
    if (stoppedAt === undefined && monitor.running === 0)
      stoppedAt = monitor.stops.filter((at) => at > closedAt).at(-1);
    if (
      recoveredAt === undefined &&
      (early
        ? now - closedAt >= RECOVER_MS
        : (stoppedAt !== undefined && now - stoppedAt >= 20_000) || now - closedAt >= 10 * 60_000)
    ) {
      if (fault === '503') await shared.clearFaults(user);
      else {
        server = await PortServer.listen(Number(new URL(url).port));
        restarted(server);
      }
      recoveredAt = Date.now();
    }
    if (recoveredAt !== undefined && ((await server.stats(user)).effectsByKey[id] ?? 0) > 0) {
      appliedAt = Date.now();
      break;
    }
    await sleep(500);
  }

  const sends = await server.sends(user, id);
  const before = sends.filter((send) => send.at < (recoveredAt ?? Number.POSITIVE_INFINITY));
  const afterClose = before.filter((send) => send.at > closedAt && fromWorker(send));
  const since = (from: number | undefined, at: number | undefined) =>
    from === undefined || at === undefined ? undefined : round((at - from) / 1000);
  const summary = {
    fault,
    'failed sync after the enqueue, s': since(enqueuedAt, failedAt),
    'tab closed after the failed sync, s': since(failedAt, closedAt),
    'worker tries after the tab closed': fault === '503' ? afterClose.length : 'not logged',
    'last worker try after the tab closed, s': since(closedAt, afterClose.at(-1)?.at),
    'worker stopped by the browser after the tab closed, s': since(closedAt, stoppedAt),
    'worker starts after the tab closed, s (from the failed sync)': monitor.starts
      .filter((at) => at > closedAt)
      .map((at) => since(failedAt, at))
      .join(', '),
    'server back after the failed sync, s': since(failedAt, recoveredAt),
    'applied after the failed sync, s': since(failedAt, appliedAt) ?? 'not applied',
    'applied after the server was back, s': since(recoveredAt, appliedAt),
    'sent by':
      sends.at(-1) === undefined ? 'nobody' : fromWorker(sends.at(-1)!) ? 'worker' : 'page',
    'Background Sync log, s after the failed sync': monitor.syncLog
      .map((entry) => `${since(failedAt, entry.at)} ${entry.event}${metadataText(entry.metadata)}`)
      .join('; '),
  };
  return {
    summary,
    effects: (await server.stats(user)).effectsByKey[id] ?? 0,
    sends: sends.map((send) => ({
      at: since(failedAt, send.at),
      status: send.status,
      from: fromWorker(send) ? 'worker' : 'page',
    })),
    workerStarts: monitor.starts.map((at) => since(failedAt, at)),
    workerStops: monitor.stops.map((at) => since(failedAt, at)),
    backgroundSync: monitor.syncLog.map((entry) => ({ ...entry, at: since(failedAt, entry.at) })),
  };
}

/** Writes a scenario's result to `bench/results/outage/` and its summary to the report. */
function report(name: string, summary: Record<string, unknown>, result: unknown): void {
  mkdirSync(RESULTS, { recursive: true });
  const file = name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();
  writeFileSync(join(RESULTS, `${file}.json`), `${JSON.stringify(result, null, 2)}\n`);
  for (const [type, value] of Object.entries(summary))
    test.info().annotations.push({ type, description: String(value) });
  console.log(`\n${name}\n${JSON.stringify(summary, null, 2)}`);
}

interface Fixtures {
  context: BrowserContext;
  openApp: (options?: { persist?: boolean; baseURL?: string }) => Promise<AppPage>;
  server: ReferenceServer;
  user: string;
}

async function measure(scenario: Scenario, fx: Fixtures) {
  const { context, user } = fx;
  // A refused connection needs a server that is really gone: one of this scenario's own, on a
  // port it keeps across the restart (the worker's origin).
  let target: ReferenceServer =
    scenario.fault === 'refused' ? await PortServer.listen(await freePort()) : fx.server;
  const url = target.url;
  try {
    const app = await fx.openApp({ persist: true, baseURL: url });
    const monitor = await Monitor.attach(context);

    if (scenario.fault === '503') await unavailable(fx.server, user);
    else await target.stop();
    const enqueuedAt = Date.now();
    const id = await app.createNote('made during the outage');
    // The enqueue's sync fires at once (the network is up); it fails and asks for a retry.
    const failedAt = await poll(
      async () =>
        (await workerEvents(context)).find((event) => event.type === 'sync_retry')?.at as
          | number
          | undefined,
      60_000,
    );
    const triesBefore = scenario.fault === '503' ? (await target.sends(user, id)).length : 0;
    await app.page.close();
    await monitor.stopAll();
    const stoppedAt = Date.now();

    let recoveredAt: number | undefined;
    let reopenedAt: number | undefined;
    let appliedAt: number | undefined;
    let cappedAt: number | undefined;
    while (appliedAt === undefined) {
      const now = Date.now();
      if (recoveredAt === undefined && now - stoppedAt >= scenario.recoverAfterMs) {
        if (scenario.fault === '503') await fx.server.clearFaults(user);
        else target = await PortServer.listen(Number(new URL(url).port));
        recoveredAt = Date.now();
      }
      const reopenDue =
        recoveredAt !== undefined &&
        scenario.reopenAfterMs !== undefined &&
        now - recoveredAt >= scenario.reopenAfterMs;
      if (cappedAt === undefined && now - stoppedAt >= CAP_MS) cappedAt = now;
      if (reopenedAt === undefined && (reopenDue || cappedAt !== undefined)) {
        reopenedAt = Date.now();
        await fx.openApp({ persist: true, baseURL: url });
      }
      if (recoveredAt !== undefined && ((await target.stats(user)).effectsByKey[id] ?? 0) > 0) {
        appliedAt = Date.now();
        break;
      }
      if (reopenedAt !== undefined && now - reopenedAt > 60_000) break;
      await monitor.stopIdle();
      await sleep(500);
    }

    // What the worker that sent it logged: its runs' triggers, in order, up to the one that
    // settled the edit.
    await sleep(2000);
    const events = await workerEvents(context);
    const settled = events.find((event) => event.type === 'settled' && event.id === id);
    const runs = events.filter(
      (event) => event.type === 'flushed' && event.holder === settled?.holder,
    );
    const sentBy = runs.find((event) => (event.at as number) >= (settled?.at as number))?.trigger;
    const sends = await target.sends(user, id);
    const effects = (await target.stats(user)).effectsByKey[id] ?? 0;

    const since = (from: number | undefined, at: number | undefined) =>
      from === undefined || at === undefined ? undefined : round((at - from) / 1000);
    const summary = {
      fault: scenario.fault,
      'failed sync after the enqueue, s': since(enqueuedAt, failedAt),
      'tries before the tab closed': scenario.fault === '503' ? triesBefore : 'not logged',
      'worker stopped after the failed sync, s': since(failedAt, stoppedAt),
      'server back after the failed sync, s': since(failedAt, recoveredAt),
      'worker starts after the failed sync, s': monitor.starts
        .filter((at) => at > stoppedAt)
        .map((at) => since(failedAt, at))
        .join(', '),
      'app opened again after the failed sync, s': since(failedAt, reopenedAt),
      'applied after the failed sync, s': since(failedAt, appliedAt) ?? 'not applied',
      'applied after the server was back, s': since(recoveredAt, appliedAt),
      'applied after the app opened again, s': since(reopenedAt, appliedAt),
      'waited past the cap': cappedAt !== undefined,
      'runs of the sending worker (trigger: remaining)': runs
        .map((event) => `${event.trigger}: ${event.remaining}`)
        .join(', '),
      'run that settled it': sentBy ?? 'unknown',
      'sent by':
        sends.at(-1) === undefined ? 'nobody' : fromWorker(sends.at(-1)!) ? 'worker' : 'page',
      'Background Sync log, s after the failed sync': monitor.syncLog
        .map(
          (entry) => `${since(failedAt, entry.at)} ${entry.event}${metadataText(entry.metadata)}`,
        )
        .join('; '),
    };
    return {
      scenario,
      summary,
      effects,
      sends: sends.map((send) => ({
        at: since(failedAt, send.at),
        status: send.status,
        from: fromWorker(send) ? 'worker' : 'page',
      })),
      workerStarts: monitor.starts.map((at) => since(failedAt, at)),
      workerStops: monitor.stops.map((at) => since(failedAt, at)),
      backgroundSync: monitor.syncLog.map((entry) => ({ ...entry, at: since(failedAt, entry.at) })),
      events: events.map((event) => ({ ...event, at: since(failedAt, event.at as number) })),
    };
  } finally {
    if (scenario.fault === '503') await fx.server.clearFaults(user);
    if (target !== fx.server) await target.stop();
  }
}

/** Every write of `user` answered 503 (with the server's `Retry-After: 1`), batches included. */
async function unavailable(server: ReferenceServer, user: string): Promise<void> {
  await server.fault({ kind: 'unavailable', route: '*', user });
  await server.fault({ kind: 'unavailable', route: 'POST /sync/batch', user });
}

/**
 * The page's view of the context's service workers, from a tab of no origin (`about:blank`, not
 * a client of the app): which run and when they start and stop, the browser's Background Sync
 * log (DevTools' "Background services" panel), and stopping them.
 */
class Monitor {
  readonly starts: number[] = [];
  readonly stops: number[] = [];
  readonly syncLog: Array<{ at: number; event: string; metadata: Record<string, string> }> = [];
  readonly #running = new Set<string>();
  #runningSince: number | undefined;

  private constructor(private readonly cdp: Cdp) {
    cdp.on(
      'ServiceWorker.workerVersionUpdated',
      (event: { versions: Array<{ versionId: string; runningStatus: string }> }) => {
        for (const version of event.versions)
          this.#version(version.versionId, version.runningStatus);
      },
    );
    cdp.on(
      'BackgroundService.backgroundServiceEventReceived',
      (event: { backgroundServiceEvent: BackgroundServiceEvent }) => {
        const { timestamp, eventName, eventMetadata } = event.backgroundServiceEvent;
        this.syncLog.push({
          at: Math.round(timestamp * 1000),
          event: eventName,
          metadata: Object.fromEntries(eventMetadata.map((entry) => [entry.key, entry.value])),
        });
      },
    );
  }

  /** A monitor on a new `about:blank` tab of Playwright's context. */
  static async attach(context: BrowserContext): Promise<Monitor> {
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    return Monitor.over({
      send: (method, params) => cdp.send(method as never, params as never),
      on: (event, handler) => cdp.on(event as never, handler as never),
    });
  }

  /** A monitor over any DevTools session of a page of the context (puppeteer's too). */
  static async over(cdp: Cdp): Promise<Monitor> {
    const monitor = new Monitor(cdp);
    await cdp.send('ServiceWorker.enable');
    await cdp.send('BackgroundService.startObserving', { service: 'backgroundSync' });
    await cdp.send('BackgroundService.setRecording', {
      shouldRecord: true,
      service: 'backgroundSync',
    });
    return monitor;
  }

  /** How many worker versions run now. */
  get running(): number {
    return this.#running.size;
  }

  #version(versionId: string, status: string): void {
    const was = this.#running.has(versionId);
    if (status === 'running' && !was) {
      this.#running.add(versionId);
      this.starts.push(Date.now());
      this.#runningSince ??= Date.now();
    } else if (status !== 'running' && was) {
      this.#running.delete(versionId);
      this.stops.push(Date.now());
      if (this.#running.size === 0) this.#runningSince = undefined;
    }
  }

  /** Stops every worker at once and waits until none runs. */
  async stopAll(): Promise<void> {
    await this.cdp.send('ServiceWorker.stopAllWorkers');
    await poll(async () => (this.#running.size === 0 ? true : undefined), 15_000);
  }

  /** Stops a worker that has run for the idle timeout, as Chromium would with no DevTools. */
  async stopIdle(): Promise<void> {
    if (this.#runningSince !== undefined && Date.now() - this.#runningSince >= IDLE_STOP_MS)
      await this.stopAll();
  }
}

/** What the monitor needs of a DevTools session (Playwright's and puppeteer's both have it). */
interface Cdp {
  send(method: string, params?: Record<string, unknown>): Promise<unknown>;
  on(event: string, handler: (payload: never) => void): void;
}

interface BackgroundServiceEvent {
  timestamp: number;
  eventName: string;
  eventMetadata: Array<{ key: string; value: string }>;
}

/** A reference server on a port of the caller's choosing, so a restart keeps the origin. */
class PortServer extends ReferenceServer {
  static async listen(port: number): Promise<PortServer> {
    const { url, child, dir } = await ServerProcess.launch({
      command: ['server/dist/cli.js', '--port', String(port)],
      args: ['--admin', '--static', 'dist/e2e'],
      label: 'e2e-outage',
      timeoutMs: 15_000,
    });
    return new PortServer(url, child, dir);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

async function poll<T>(read: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`nothing within ${timeoutMs} ms`);
    await sleep(200);
  }
}

const round = (value: number) => Math.round(value * 10) / 10;

const metadataText = (metadata: Record<string, string>) => {
  const entries = Object.entries(metadata);
  return entries.length === 0 ? '' : ` (${entries.map(([k, v]) => `${k}: ${v}`).join(', ')})`;
};
