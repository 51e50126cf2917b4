/**
 * Micro-benchmark of the selection scan (SPEC §7): the cost of reading one batch must not grow
 * with the rows already drained or still queued. Drains N rows in batches, each batch scanned
 * from the last row seen and then deleted, and prints the time per batch early and late in the
 * drain. Node only (memory store and fake-indexeddb): it shows the algorithmic shape, not
 * Chromium's tombstone cost, which needs the browser benchmark of `npm run bench`.
 *
 *   npx tsx bench/store-scan.ts [rows=5000] [batch=50]
 */
import 'fake-indexeddb/auto';
import { IDBFactory } from 'fake-indexeddb';
import type { OutboxStore, RowCursor } from '../shared/model/store.ts';
import { openIdbStore } from '../shared/store/idb.ts';
import { createMemoryStore } from '../shared/store/memory.ts';

const rows = Number(process.argv[2] ?? 5_000);
const batch = Number(process.argv[3] ?? 50);

async function drain(store: OutboxStore): Promise<{ firstMs: number; lastMs: number }> {
  const put = Array.from({ length: rows }, (_, i) => ({
    id: `r${String(i).padStart(6, '0')}`,
    owner: 'u1',
    collection: 'notes',
    targetId: `n_${i}`,
    savedAt: i,
    state: 'queued',
  }));
  await store.replace({ owner: 'u1', expected: [], put, reason: 'bench' });
  const times: number[] = [];
  let after: RowCursor | undefined;
  for (;;) {
    const started = performance.now();
    const found = (await store.scan('u1', { ...(after && { after }), limit: batch })) as Array<{
      id: string;
      savedAt: number;
    }>;
    times.push(performance.now() - started);
    const last = found.at(-1);
    if (!last) break;
    await store.replace({
      owner: 'u1',
      expected: [],
      delete: found.map((r) => r.id),
      reason: 'ack',
    });
    after = { savedAt: last.savedAt, id: last.id };
  }
  const mean = (part: number[]) => part.reduce((a, b) => a + b, 0) / Math.max(1, part.length);
  const tenth = Math.max(1, Math.floor(times.length / 10));
  return { firstMs: mean(times.slice(0, tenth)), lastMs: mean(times.slice(-tenth)) };
}

const results = {
  memory: await drain(createMemoryStore({ name: 'bench' })),
  'fake-indexeddb': await drain(
    await openIdbStore({ name: 'bench', indexedDB: new IDBFactory(), broadcast: false }),
  ),
};
console.log(`scan of ${batch} rows while draining ${rows} (mean ms, first vs last tenth)`);
for (const [store, { firstMs, lastMs }] of Object.entries(results)) {
  console.log(
    `${store.padEnd(16)} ${firstMs.toFixed(3).padStart(8)} ${lastMs.toFixed(3).padStart(8)}`,
  );
}
