import { KEY_KINDS } from './keys.ts';
import { GUARANTEES } from './oracles.ts';
import { runSim, type SimResult } from './run.ts';
import { ACTORS, FAULTS, type StoreKind, swarmConfig } from './swarm-config.ts';

/**
 * The swarm (SPEC §20): seed after seed, each with its own faults and actors, and a tally of
 * what the seeds reached — every fault that struck, every actor that acted, every guarantee whose
 * oracle had something to check — so a soak shows it covered what it claims to.
 */

export interface Tally {
  /** Seeds in which it happened at least once. */
  seeds: number;
  /** How often it happened in all. */
  times: number;
}

export interface SwarmReport {
  store: StoreKind;
  from: number;
  seeds: number;
  seconds: number;
  failures: SimResult[];
  tally: Map<string, Tally>;
}

export interface SwarmOptions {
  from?: number;
  seeds: number;
  store: StoreKind;
  /** Called after each seed; return false to stop. */
  onResult?: (result: SimResult) => boolean | undefined;
  /** Stop at the first failure. */
  stopOnFailure?: boolean;
}

function add(tally: Map<string, Tally>, key: string, times: number): void {
  const entry = tally.get(key) ?? { seeds: 0, times: 0 };
  entry.seeds++;
  entry.times += times;
  tally.set(key, entry);
}

/** What one run adds to a tally. */
export function tallyRun(tally: Map<string, Tally>, result: SimResult): void {
  for (const [key, n] of result.coverage) if (n > 0) add(tally, key, n);
  for (const g of GUARANTEES)
    if (result.exercised[g] > 0) add(tally, `oracle:${g}`, result.exercised[g]);
  add(tally, `holders:${result.config.holders}`, 1);
  add(tally, `owners:${result.config.owners}`, 1);
  add(tally, `store:${result.config.store}`, 1);
}

export async function runSwarm(options: SwarmOptions): Promise<SwarmReport> {
  const from = options.from ?? 1;
  const tally = new Map<string, Tally>();
  const failures: SimResult[] = [];
  const started = performance.now();
  let seeds = 0;
  for (let seed = from; seed < from + options.seeds; seed++) {
    const result = await runSim(swarmConfig(seed, options.store));
    seeds++;
    tallyRun(tally, result);
    if (result.violation) failures.push(result);
    if (options.onResult?.(result) === false) break;
    if (result.violation && options.stopOnFailure) break;
  }
  return {
    store: options.store,
    from,
    seeds,
    seconds: (performance.now() - started) / 1000,
    failures,
    tally,
  };
}

/** The rows the coverage table must show, by group: none of them may stay at 0. */
export function coverageRows(): Array<{ group: string; key: string; label: string }> {
  const rows: Array<{ group: string; key: string; label: string }> = [];
  for (const fault of FAULTS) rows.push({ group: 'fault', key: `fault:${fault}`, label: fault });
  const actorKeys: Record<(typeof ACTORS)[number], string[]> = {
    creates: ['actor:create'],
    updates: ['actor:update'],
    deletes: ['actor:delete'],
    'pending-edits': ['actor:update-pending', 'actor:delete-pending'],
    retry: ['actor:retry'],
    discard: ['actor:discard'],
    'resume-held': ['actor:resume-held'],
    restore: ['actor:restore'],
    'legacy-v0': ['actor:legacy-v0'],
    corruptor: ['actor:corruptor'],
    'cross-owner': ['actor:cross-owner'],
    'sign-out': ['actor:sign-out', 'actor:sign-in'],
    'legacy-busy': ['actor:legacy-busy'],
    'workbox-route': ['actor:workbox-route'],
    typing: ['actor:typing'],
  };
  for (const actor of ACTORS)
    for (const key of actorKeys[actor]) rows.push({ group: 'actor', key, label: key.slice(6) });
  for (const n of [1, 2, 3])
    rows.push({ group: 'actor', key: `holders:${n}`, label: `${n} holder${n > 1 ? 's' : ''}` });
  rows.push({ group: 'actor', key: 'owners:2', label: 'two owners' });
  rows.push({ group: 'actor', key: 'fault:batch', label: 'batched sends (§15.1)' });
  rows.push({ group: 'actor', key: 'actor:restart', label: 'holder restarted' });
  for (const g of GUARANTEES) rows.push({ group: 'oracle', key: `oracle:${g}`, label: g });
  for (const what of [
    'takeover',
    'conflict-successor',
    'merge-of-attempted-row',
    'quarantine',
    'retry-after-newer-edit',
    'legacy-sent-out-of-order',
    'successor-of-expired-claim',
    'ack-left-an-intent-behind',
    'conflict-chain-over-8',
    'killed-request-landed',
    'aborted-request-landed',
    'legacy-copy-past-lease',
    'page-request-queued-after-attempt',
    'page-request-queued-behind',
    'edit-beside-two-in-flight',
    'edit-beside-two-in-flight-clocks-against',
  ])
    rows.push({ group: 'situation', key: `reached:${what}`, label: what });
  // What SPEC §20 says the swarm reaches: corrupt values under every IndexedDB key type, a
  // create's receipt pruned before its intents meet it, and clocks that tie across holders.
  for (const kind of KEY_KINDS)
    rows.push({
      group: 'reach',
      key: `corrupt-key:${kind}`,
      label: `corrupt under ${kind === 'array' ? 'an' : 'a'} ${kind} key`,
    });
  for (const [what, label] of [
    ['receipt-pruned', 'receipts pruned'],
    ['edit-after-receipt-pruned', 'pending:C edited, receipt pruned'],
    ['clock-tie', 'clocks tie across holders'],
    ['batches-on-the-wire-together', 'batches on the wire together'],
    ['scan-in-pages', 'queue read in several pages'],
  ] as const)
    rows.push({ group: 'reach', key: `reached:${what}`, label });
  for (const event of ['converted', 'storm', 'held', 'blocked', 'quarantined'])
    rows.push({ group: 'situation', key: `event:${event}`, label: `event ${event}` });
  return rows;
}

/** The soak's summary: seeds/s, failures, and what was reached per 1,000 seeds. */
export function formatReport(report: SwarmReport): string {
  // Rare rows keep their digits: a long soak reaches some on fewer than one seed in 1,000.
  const per = (n: number) => {
    const rate = (n * 1000) / Math.max(1, report.seeds);
    return rate.toFixed(rate === 0 || rate >= 10 ? 0 : rate >= 1 ? 1 : 2);
  };
  const lines = [
    `${report.seeds} seeds on the ${report.store} store (seeds ${report.from}–${report.from + report.seeds - 1}) in ${report.seconds.toFixed(1)} s: ${(report.seeds / report.seconds).toFixed(1)} seeds/s, ${report.failures.length} failed`,
    '',
    'per 1,000 seeds                      seeds reached   times',
  ];
  let group = '';
  const missing: string[] = [];
  for (const row of coverageRows()) {
    if (row.group !== group) {
      group = row.group;
      lines.push(group === 'reach' ? 'reached (SPEC §20)' : `${group}s`);
    }
    const t = report.tally.get(row.key) ?? { seeds: 0, times: 0 };
    if (t.times === 0) missing.push(row.label);
    lines.push(
      `  ${row.label.padEnd(34)} ${per(t.seeds).padStart(8)} ${per(t.times).padStart(10)}${t.times === 0 ? '   NOT REACHED' : ''}`,
    );
  }
  if (missing.length) lines.push('', `not reached: ${missing.join(', ')}`);
  return lines.join('\n');
}
