import { setTimeout as sleep } from 'node:timers/promises';
import { outboxHooks, withProfile } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser, round } from './session.ts';

export interface OutageResult {
  rows: number;
  outageSeconds: number;
  /** Requests the worker tried while the server could not be reached. */
  refused: number;
  /** From the moment the server is reachable again to the server's last effect. */
  drainSeconds: number;
  /** When after recovery the first and the last row took effect, seconds. */
  firstEffectSeconds: number;
  drained: number;
  complete: boolean;
}

export interface OutageOptions {
  rows: number;
  outageMs: number;
  capSeconds: number;
}

/**
 * SPEC §12 "Recovery pulls the queue forward": rows queued while the server cannot be reached
 * (every request to it refused at the network, as when it is down), retried on the worker's own
 * backoff timer with no page asking; then the server is reachable again and nothing else
 * changes. Timed from recovery to the server's last effect.
 */
export async function measureOutageDrain(
  server: BenchServer,
  options: OutageOptions,
): Promise<OutageResult> {
  return withProfile(
    server.url,
    async (profile) => {
      const user = freshUser('outage');
      const worker = await connectOutbox(server, profile, user);
      let refused = 0;
      const unreachable = '**/api/**';
      await profile.context.route(unreachable, (route) => {
        refused++;
        return route.abort('connectionrefused');
      });
      await outboxHooks(worker, (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0), [
        user,
        options.rows,
      ]);
      await profile.call((bench) => bench.outboxFlush());
      // The outage is the scenario: the worker retries on its own timer meanwhile.
      await sleep(options.outageMs);
      await profile.context.unroute(unreachable);
      const recovered = performance.now();
      let first: number | undefined;
      let effects = 0;
      let at = recovered;
      for (;;) {
        await sleep(50);
        at = performance.now();
        effects = (await server.stats(user)).effects;
        if (effects > 0) first ??= at;
        if (effects >= options.rows || at - recovered > options.capSeconds * 1000) break;
      }
      return {
        rows: options.rows,
        outageSeconds: options.outageMs / 1000,
        refused,
        drainSeconds: round((at - recovered) / 1000, 2),
        firstEffectSeconds: round(((first ?? at) - recovered) / 1000, 2),
        drained: effects,
        complete: effects >= options.rows,
      };
    },
    { offlineCapable: true },
  );
}
