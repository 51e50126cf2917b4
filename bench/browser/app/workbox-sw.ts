import { Queue } from 'workbox-background-sync';
import type { BenchRequest, WorkboxMessage, WorkboxReply, WorkboxWorkerHooks } from './protocol.ts';

/**
 * The comparison worker: `workbox-background-sync`'s `Queue` as documented, replaying the same
 * requests as our outbox (same URLs, bodies and `Idempotency-Key` headers) to the same server.
 * `forceSyncFallback` keeps the browser's own `sync` events out of the measurement: replay runs
 * only when the runner asks for it, so exactly one replay loop drains the queue, as one sync
 * event would. Workbox stores the whole request, so the `Authorization` header goes in with it.
 */

const scope = globalThis as unknown as ServiceWorkerGlobalScope & { bench?: WorkboxWorkerHooks };
const queue = new Queue('bench', { forceSyncFallback: true });

scope.addEventListener('install', (event) => event.waitUntil(scope.skipWaiting()));
scope.addEventListener('activate', (event) => event.waitUntil(scope.clients.claim()));

function toRequest(request: BenchRequest, authorization: string): Request {
  return new Request(new URL(request.url, scope.location.href), {
    method: request.method,
    headers: { ...request.headers, authorization },
    ...(request.body === null ? {} : { body: request.body }),
  });
}

/**
 * Replays until the queue is empty. `replayRequests` stops at the first network failure (the
 * entry goes back to the front); a real app waits for the browser's next `sync`, the bench
 * retries at once so a response-loss run ends in bounded time.
 */
async function replayAll(maxRounds: number): Promise<number> {
  let rounds = 0;
  for (;;) {
    rounds++;
    try {
      await queue.replayRequests();
      return rounds;
    } catch (error) {
      if (rounds >= maxRounds) throw error;
    }
  }
}

scope.addEventListener('message', (event) => {
  const data = event.data as WorkboxMessage;
  const reply = event.ports[0];
  const answer = (work: Promise<Partial<WorkboxReply>>) =>
    event.waitUntil(
      work.then(
        (result) => reply?.postMessage({ ok: true, ...result } satisfies WorkboxReply),
        (error: unknown) =>
          reply?.postMessage({ ok: false, error: String(error) } satisfies WorkboxReply),
      ),
    );
  if (data?.type === 'bench.enqueue') {
    answer(
      queue.pushRequest({ request: toRequest(data.request, data.authorization) }).then(() => ({})),
    );
  } else if (data?.type === 'bench.replay') {
    answer(replayAll(data.maxRounds).then((rounds) => ({ rounds })));
  }
});

scope.bench = {
  async push(requests, authorization) {
    const started = performance.now();
    for (const request of requests)
      await queue.pushRequest({ request: toRequest(request, authorization) });
    return { ms: performance.now() - started };
  },
  size: () => queue.size(),
};
