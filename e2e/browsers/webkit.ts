import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { Evaluate, OpenParams } from '../support/outbox-tab.ts';
import { BrowserTab, type Profile } from './profile.ts';

/**
 * WebKitGTK (Safari's engine, Debian's `webkit2gtk-driver`) driven over classic W3C WebDriver:
 * WebKitWebDriver starts MiniBrowser, which has no headless mode, so it runs on an Xvfb display
 * (TOOLING). The protocol is a handful of HTTP calls, made here with `fetch`. One driver serves
 * one session, and each session is a private in-memory profile, so a profile is one driver.
 */

/** Where Debian's webkit2gtk-driver and xvfb put the driver, the browser and the display. */
export const WEBKIT_DRIVER_PATH = process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver';
export const MINIBROWSER_PATH =
  process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
export const XVFB_PATH = process.env.XVFB_PATH ?? '/usr/bin/Xvfb';

/** An X display for MiniBrowser: Xvfb picks a free display number and reports it. */
export class Display {
  private constructor(
    readonly name: string,
    private readonly process: ChildProcess,
  ) {}

  static async start(): Promise<Display> {
    const child = spawn(
      XVFB_PATH,
      ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'],
      {
        stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      },
    );
    const number = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdio[3]?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      child.once('exit', (code) => reject(new Error(`Xvfb exited with ${code}`)));
      child.once('error', reject);
    });
    return new Display(`:${number}`, child);
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return;
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.kill('SIGTERM');
    await exited;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A script result as the async wrapper below reports it. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Runs a function in the current window: `execute/async` passes its arguments and, last, the
 * callback that ends the script. Errors come back as data, so a page error is not mistaken for a
 * driver error.
 */
const ASYNC_WRAPPER = `const done = arguments[arguments.length - 1];
const arg = arguments.length > 1 ? arguments[0] : undefined;
const fn = (%FN%);
Promise.resolve().then(() => fn(arg)).then(
  (value) => done({ ok: true, value: value === undefined ? null : value }),
  (error) => done({ ok: false, error: String((error && error.stack) || error) }),
);`;

/** One WebKitWebDriver process and its one session. */
class WebDriverSession {
  #current: string | undefined;
  /** Commands run one at a time: a script runs in whichever window is current. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly url: string,
    private readonly id: string,
    private readonly driver: ChildProcess,
  ) {}

  static async start(display: Display): Promise<WebDriverSession> {
    const port = await freePort();
    const driver = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`], {
      env: { ...process.env, DISPLAY: display.name },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    driver.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      for (let i = 0; ; i++) {
        const ready = await fetch(`${url}/status`)
          .then((r) => r.ok)
          .catch(() => false);
        if (ready) break;
        if (i > 100 || driver.exitCode !== null)
          throw new Error(`WebKitWebDriver did not start:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const created = (await command(url, 'POST', '/session', {
        capabilities: {
          alwaysMatch: {
            browserName: 'MiniBrowser',
            'webkitgtk:browserOptions': {
              binary: MINIBROWSER_PATH,
              args: ['--automation', '--features=+StorageAPI,+PushAPI'],
            },
          },
        },
      })) as { sessionId: string };
      const session = new WebDriverSession(url, created.sessionId, driver);
      await session.#send('POST', '/timeouts', { script: 120_000, pageLoad: 30_000 });
      session.#current = (await session.#send('GET', '/window')) as string;
      return session;
    } catch (error) {
      driver.kill('SIGKILL');
      throw error;
    }
  }

  /** The window the session started with. */
  get first(): string {
    return this.#current!;
  }

  run<A, R>(handle: string, fn: (arg: A) => R | Promise<R>, arg: A): Promise<R> {
    return this.#serial(async () => {
      await this.#switch(handle);
      const script = ASYNC_WRAPPER.replace('%FN%', fn.toString());
      const outcome = (await this.#send('POST', '/execute/async', {
        script,
        // An undefined argument must stay undefined (JSON would make it null).
        args: arg === undefined ? [] : [arg],
      })) as Outcome;
      if (!outcome.ok) throw new Error(`in the page: ${outcome.error}`);
      return outcome.value as R;
    });
  }

  navigate(handle: string, url: string): Promise<void> {
    return this.#serial(async () => {
      await this.#switch(handle);
      await this.#send('POST', '/url', { url });
    });
  }

  newWindow(): Promise<string> {
    return this.#serial(
      async () =>
        ((await this.#send('POST', '/window/new', { type: 'tab' })) as { handle: string }).handle,
    );
  }

  closeWindow(handle: string): Promise<void> {
    return this.#serial(async () => {
      await this.#switch(handle);
      await this.#send('DELETE', '/window');
      this.#current = undefined;
    });
  }

  async quit(): Promise<void> {
    await this.#send('DELETE', '').catch(() => undefined);
    if (this.driver.exitCode === null) {
      const exited = new Promise((resolve) => this.driver.once('exit', resolve));
      this.driver.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
      if (this.driver.exitCode === null) this.driver.kill('SIGKILL');
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #switch(handle: string): Promise<void> {
    if (this.#current === handle) return;
    await this.#send('POST', '/window', { handle });
    this.#current = handle;
  }

  #send(method: string, path: string, body?: unknown): Promise<unknown> {
    return command(this.url, method, `/session/${this.id}${path}`, body);
  }
}

async function command(url: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as { value: unknown };
  if (!response.ok) {
    const error = json.value as { error?: string; message?: string };
    throw new Error(`WebDriver ${method} ${path}: ${error.error}: ${error.message}`);
  }
  return json.value;
}

class WebKitTab extends BrowserTab {
  constructor(
    private readonly profile: WebKitProfile,
    readonly handle: string,
    session: WebDriverSession,
  ) {
    super(((fn, arg) => session.run(handle, fn, arg)) as Evaluate);
  }

  close(): Promise<void> {
    return this.profile.leave(this);
  }
}

/** One WebKitWebDriver session: a private in-memory profile in one MiniBrowser. */
export class WebKitProfile implements Profile {
  readonly browser = 'webkit';
  readonly #open = new Set<string>();
  /** Windows no page is in (about:blank): WebDriver ends the session with its last window. */
  readonly #spare: string[] = [];

  private constructor(
    private readonly session: WebDriverSession,
    private readonly baseURL: string,
  ) {
    this.#spare.push(session.first);
  }

  static async create(display: Display, baseURL: string): Promise<WebKitProfile> {
    return new WebKitProfile(await WebDriverSession.start(display), baseURL);
  }

  async open(params: OpenParams): Promise<BrowserTab> {
    const handle = this.#spare.pop() ?? (await this.session.newWindow());
    this.#open.add(handle);
    await this.session.navigate(handle, `${this.baseURL}${params.path ?? '/app/'}`);
    const tab = new WebKitTab(this, handle, this.session);
    await tab.start(params);
    return tab;
  }

  /** Closes the tab, or leaves its page for about:blank when it is the last window. */
  async leave(tab: WebKitTab): Promise<void> {
    this.#open.delete(tab.handle);
    if (this.#open.size + this.#spare.length > 0) {
      await this.session.closeWindow(tab.handle);
    } else {
      await this.session.navigate(tab.handle, 'about:blank');
      this.#spare.push(tab.handle);
    }
  }

  async close(): Promise<void> {
    await this.session.quit();
  }
}
