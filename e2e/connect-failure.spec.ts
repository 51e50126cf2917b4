import { expect, test } from './support/fixtures.ts';
import type { CallResult, ConnectParams, E2eWindow } from './support/outbox-tab.ts';

/**
 * `connectOutbox` fails at once, with the browser's reason, when no worker can come (SPEC §13):
 * a script that is not there, one that throws as it first runs (the Vite guide's worker in
 * `vite dev` without `devOptions.navigateFallback`), one whose install event rejects (a precache
 * that misses a file).
 * Before, each waited for the connection's timeout twice and said only `worker_unavailable`.
 */

const TIMEOUT_MS = 10_000;

const cases: Array<{
  what: string;
  params: Partial<ConnectParams>;
  cause: string;
  reason: RegExp;
}> = [
  {
    what: 'a script that is not there (404)',
    params: { swUrl: '/no-such-worker.js', type: 'classic' },
    cause: 'not_found',
    reason: /404/,
  },
  {
    what: 'a script that throws as it first runs',
    params: { sw: { throw: 'on purpose' } },
    cause: 'script_error',
    reason: /evaluation failed/,
  },
  {
    what: 'a worker whose install event rejects',
    params: { sw: { install: 'fail' } },
    cause: 'install_failed',
    reason: /failed to install/,
  },
];

for (const { what, params, cause, reason } of cases) {
  test(`connectOutbox rejects at once with the browser's reason: ${what}`, async ({
    context,
    baseURL,
    user,
  }) => {
    const page = await context.newPage();
    await page.goto(`${baseURL}/app/`);
    await page.waitForFunction(() => 'e2e' in globalThis);
    const result = await page.evaluate(
      async (p) => {
        const started = performance.now();
        const connected = await (globalThis as unknown as E2eWindow).e2e.connect(p);
        return { ...connected, ms: performance.now() - started };
      },
      { owner: user, timeoutMs: TIMEOUT_MS, ...params } as ConnectParams,
    );
    const failed = result as Extract<CallResult, { ok: false }> & { ms: number };
    expect(failed.ok).toBe(false);
    expect(failed.error).toMatchObject({
      code: 'worker_unavailable',
      details: { cause, reason: expect.stringMatching(reason) },
    });
    expect(failed.error.message).toMatch(reason);
    // At once: well within one timeout, where it used to take two.
    expect(failed.ms).toBeLessThan(TIMEOUT_MS / 2);
  });
}
