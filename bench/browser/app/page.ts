import { connectOutbox, type OutboxClient } from '../../../client/index.ts';
import {
  type BenchPageApi,
  type BenchRequest,
  notePayload,
  outboxWorkerUrl,
  type PageCallTrace,
  type WorkboxMessage,
  type WorkboxReply,
} from './protocol.ts';

/**
 * The bench page: connects to one of the two workers and runs the page-side loops (enqueue
 * latency and rate, the drain triggers) so that only their results cross to the runner.
 */

let outbox: OutboxClient | undefined;
let replay: Promise<WorkboxReply> | undefined;
const snapshots = { count: 0, rows: 0 };

function connected(): OutboxClient {
  if (outbox === undefined) throw new Error('connectOutbox first');
  return outbox;
}

function askWorkbox(message: WorkboxMessage): Promise<WorkboxReply> {
  const controller = navigator.serviceWorker.controller;
  if (controller === null) return Promise.reject(new Error('no controlling worker'));
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port1.onmessage = (event) => {
      port1.close();
      resolve(event.data as WorkboxReply);
    };
    controller.postMessage(message, [port2]);
  });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function pool(count: number, width: number, task: (i: number) => Promise<unknown>) {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane));
}

const enqueueNote = (i: number) =>
  connected().enqueue({ collection: 'notes', kind: 'create', payload: notePayload(i) });

async function enqueueWorkbox(request: BenchRequest, authorization: string): Promise<void> {
  const reply = await askWorkbox({ type: 'bench.enqueue', request, authorization });
  if (!reply.ok) throw new Error(reply.error);
}

const bench: BenchPageApi = {
  async connectOutbox(owner, options) {
    outbox = await connectOutbox({
      swUrl: outboxWorkerUrl(options),
      scope: '/',
      type: 'module',
      owner,
      periodicSync: false,
    });
  },

  async connectWorkbox() {
    const container = navigator.serviceWorker;
    if (container.controller !== null) return;
    const controlled = new Promise((resolve) =>
      container.addEventListener('controllerchange', resolve, { once: true }),
    );
    await container.register('/workbox-sw.js', { scope: '/', type: 'module' });
    await controlled;
  },

  setAuth: (token) => connected().setAuth({ authorization: `Bearer ${token}` }),

  async outboxEnqueueLatency(count, from) {
    const latencies: number[] = [];
    for (let i = 0; i < count; i++) latencies.push(await timed(() => enqueueNote(from + i)));
    return latencies;
  },

  async outboxEnqueueTraced(count, from) {
    const calls: PageCallTrace[] = [];
    const now = () => performance.timeOrigin + performance.now();
    for (let i = 0; i < count; i++) {
      // An id of our own, so the worker's trace can tell which call each transaction served.
      const id = `notes-trace-${String(from + i).padStart(8, '0')}`;
      const start = now();
      await connected().enqueue({
        id,
        collection: 'notes',
        kind: 'create',
        payload: notePayload(from + i),
      });
      calls.push({ id, start, end: now() });
    }
    return calls;
  },

  outboxTimedStats: () => timed(() => connected().stats()),

  outboxEnqueueRate: (count, inFlight, from) =>
    timed(() => pool(count, inFlight, (i) => enqueueNote(from + i))),

  async workboxEnqueueLatency(requests, authorization) {
    const latencies: number[] = [];
    for (const request of requests)
      latencies.push(await timed(() => enqueueWorkbox(request, authorization)));
    return latencies;
  },

  workboxEnqueueRate: (requests, authorization, inFlight) =>
    timed(() =>
      pool(requests.length, inFlight, (i) => enqueueWorkbox(requests[i]!, authorization)),
    ),

  outboxFlush() {
    void connected()
      .flush({ force: true })
      .catch(() => undefined);
  },

  outboxSubscribe() {
    connected().subscribe((rows) => {
      snapshots.count++;
      snapshots.rows = rows.length;
    });
  },

  outboxSnapshots: () => ({ ...snapshots }),

  async outboxDrain(maxRounds) {
    const client = connected();
    let rounds = 0;
    while (rounds < maxRounds && (await client.stats()).total > 0) {
      rounds++;
      await client.flush({ force: true }).catch(() => undefined);
    }
    return rounds;
  },

  workboxReplay(maxRounds) {
    replay = askWorkbox({ type: 'bench.replay', maxRounds });
  },

  async workboxReplayDone() {
    if (replay === undefined) throw new Error('workboxReplay first');
    return replay;
  },
};

(globalThis as unknown as { bench: BenchPageApi }).bench = bench;
