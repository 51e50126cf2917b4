import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Deliberately broken builds (SPEC §20): the simulation must catch each. A mutant is a copy of
 * `shared/` (with the simulation beside it) where one rule of the contract is edited out; the
 * simulation of that copy runs instead of the real one. Nothing in the library knows about them.
 */

export interface Mutant {
  /** What the broken build does wrong. */
  title: string;
  file: string;
  /** Exact texts of `file` replaced, each by what replaces it. */
  edits: Array<{ from: string; to: string }>;
  /** The same rule broken in other files too, when it is said in more than one place. */
  also?: Array<{ file: string; edits: Array<{ from: string; to: string }> }>;
}

export const MUTANTS: Record<string, Mutant> = {
  'plugin-turn-after-capture': {
    title:
      "the Workbox plugin takes a request's turn on its URL only after capturing it: a request whose capture waits less (its credentials already handed over) goes before an earlier one (SPEC §22)",
    file: 'sw/workbox/plugin.ts',
    edits: [
      {
        from: `    const { earlier, release } = this.#takeTurn(request.url);
    let capture: Capture | undefined;
    try {
      capture = await this.#capture(request);
    } finally {`,
        to: `    let capture: Capture | undefined;
    let earlier: Promise<void> = Promise.resolve();
    let release = () => {};
    try {
      capture = await this.#capture(request);
      if (capture !== undefined) await this.#takeCredentials(request, capture.owner);
      ({ earlier, release } = this.#takeTurn(request.url));
    } finally {`,
      },
    ],
  },
  'plugin-ignores-request-on-wire': {
    title:
      'the Workbox plugin lets a request of a URL leave while an earlier one of it is on the wire: should that one fail, it is queued and lands after the later one (SPEC §22)',
    file: 'sw/workbox/plugin.ts',
    edits: [
      {
        from: `      await earlier;
`,
        to: '',
      },
    ],
  },
  'retry-new-key': {
    title: 'a retry with a new key: a transient failure gives the row a new idempotency key',
    file: 'shared/plan/settle.ts',
    edits: [
      {
        from: `    case 'transient':
      row = {
        ...rest,
        state: 'queued',`,
        to: `    case 'transient':
      row = {
        ...rest,
        ...(rest.request === undefined
          ? {}
          : {
              request: {
                ...rest.request,
                requestId: \`\${rest.request.requestId}r\${ctx.fence}\`,
                headers: {
                  ...rest.request.headers,
                  'idempotency-key': \`"\${rest.request.requestId}r\${ctx.fence}"\`,
                },
              },
            }),
        state: 'queued',`,
      },
    ],
  },
  'claim-without-fence-check': {
    title:
      'a claim without the fence comparison: the claim is written without comparing the row (its claim and fence) as it was seen',
    file: 'shared/plan/claim.ts',
    edits: [
      {
        from: `      expected: [{ id: current.id, row: raw }, ...(record?.expected ?? [])],
      ...(record === undefined`,
        to: `      expected: [],
      ...(true`,
      },
    ],
  },
  'ack-without-holder-check': {
    title: 'an ACK without the holder check: a success deletes the row whoever holds its claim',
    file: 'shared/plan/settle.ts',
    edits: [
      {
        from: `): SettlePlan {
  if (!isClaimMine(current, ctx.holderId, ctx.fence)) return { kind: 'not_mine' };
  const converting`,
        to: `): SettlePlan {
  if (current === undefined) return { kind: 'not_mine' };
  const converting`,
      },
    ],
  },
  'send-without-credentials': {
    title:
      'a signed-out owner downgrades: a row with no credentials for its owner goes without any instead of waiting held (SPEC §13)',
    file: 'shared/runtime/fetch-transport.ts',
    edits: [
      {
        from: `  if (auth === null) return { kind: 'auth_unavailable' };`,
        to: `  if (auth === null) auth = {};`,
      },
    ],
  },
  'resend-at-any-age': {
    title:
      'a resend at any age: a key the server may have forgotten is resent instead of asking the receipt lookup (SPEC §15)',
    file: 'shared/plan/key-retention.ts',
    edits: [
      {
        from: `  if (!mayHaveAppliedKey(row)) return 'send';`,
        to: `  if (row !== undefined) return 'send';`,
      },
    ],
  },
  'order-by-saved-at': {
    title:
      "order by savedAt: a record's rows go, merge and convert in the order their writers' clocks say, not the store's commit order (SPEC §6.1)",
    file: 'shared/plan/select.ts',
    edits: [
      {
        from: `  if (a.seq !== undefined && b.seq !== undefined) return a.seq < b.seq;\n`,
        to: '',
      },
      {
        from: `  const head =
    firstOf(open.filter((row) => row.seq !== undefined)) ??
    firstOf(open.filter((row) => row.seq === undefined));`,
        to: `  const head = firstOf(open);`,
      },
      {
        from: `  if (head.seq !== undefined && first.seq === undefined)
    first = linkedFirst(firstOf(open.filter((row) => row.seq === undefined))!, byId);\n`,
        to: '',
      },
    ],
  },
  /**
   * Differs from the sound build only where an edit is made beside two rows of its record in
   * flight at once (a legacy tab's send beside a claim) whose senders' clocks are against the
   * order they were made in; the oracle that checks the link (G4
   * `successor-of-an-older-row-in-flight`, SPEC §6) sees it there. The typing user, who goes on
   * editing one record, makes that situation often enough: seed 923 of seeds 1–3,000.
   */
  'predecessor-by-sent-at': {
    title:
      'predecessor by sentAt: a new edit follows the row in flight sent last by a clock, not the one made last (SPEC §6.1)',
    file: 'shared/plan/enqueue.ts',
    edits: [
      {
        from: `  return inMadeOrder(inFlight).at(-1);`,
        to: `  return [...inFlight].sort((a, b) => (a.row.sentAt ?? 0) - (b.row.sentAt ?? 0)).at(-1);`,
      },
    ],
  },
};

/**
 * Broken builds the swarm does not catch within {@link MUTANTS}' bound of 1,000 seeds, kept
 * runnable (`npm run sim -- --mutant NAME --seeds N`) with a planner test that pins their rule.
 * None at present.
 */
export const UNCAUGHT: Record<string, Mutant> = {};

/**
 * The rules the fixes of the suspected findings brought in, each taken out again, one at a time:
 * whether the simulation finds the old behaviour on its own is how it decides each suspicion.
 * Not part of `npm test`; `npm run sim -- --mutant NAME` runs one.
 */
export const REVERTS: Record<string, Mutant> = {
  'predecessor-hops-8': {
    title: 'predecessor look-ups follow at most 8 superseded hops',
    file: 'shared/core/predecessors.ts',
    edits: [
      {
        from: `  for (;;) {
    let into = hops.get(current);`,
        to: `  for (let hop = 0; hop < 8; hop++) {
    let into = hops.get(current);`,
      },
    ],
  },
  'settled-claim-live': {
    title: "a held or blocked row's expired claim counts as live to a holder whose clock is behind",
    file: 'shared/plan/in-flight.ts',
    edits: [{ from: `  if (row.state !== 'sending') return false;\n`, to: '' }],
  },
  'ack-without-record-check': {
    title: 'the full ACK with intents has no record check',
    file: 'shared/plan/settle.ts',
    edits: [
      {
        from: `        : extra.recordIds !== undefined
          ? { records: [{ ...record, ids: extra.recordIds }] }
          : {}),`,
        to: `        : {}),`,
      },
    ],
  },
  'batches-forget-records': {
    title: "a record's turn is decided over the rows of one batch of the scan only",
    file: 'shared/core/dispatcher.ts',
    edits: [
      {
        from: `  const { known } = pass;\n  const touched = new Set<string>();\n`,
        to: `  const { known } = pass;\n  known.clear();\n  const touched = new Set<string>();\n`,
      },
    ],
  },
  'ack-marks-nothing-overtaken': {
    title: 'the success ACK leaves the blocked rows of its record unmarked, so one is merged later',
    file: 'shared/core/success-ack.ts',
    edits: [
      {
        from: `  const passed = overtaken(current, rows);`,
        to: `  const passed: Observed[] = [];`,
      },
    ],
  },
  'ledger-at-ack-only': {
    title:
      'the conflict ledger entry is written only by the ACK: a legacy tab that settles the resend, or a discard after it may have applied, leaves its overwrite without one',
    file: 'shared/plan/conflict-successor.ts',
    edits: [
      {
        from: `...ledgerChanges(superseded, [successor]),`,
        to: `...ledgerChanges(superseded),`,
      },
    ],
    also: [
      {
        file: 'shared/plan/manual-actions.ts',
        edits: [{ from: `        rows.filter(unknown),\n`, to: '' }],
      },
    ],
  },
  'reissued-key-sent-by-legacy-unseen': {
    title:
      'a re-issued key a legacy tab sent (its sentAt left, no attempt counted) counts as never sent, and is resent past the retention (W3-50)',
    file: 'shared/plan/key-retention.ts',
    edits: [
      {
        from: `  return row.evidence?.attemptCount !== 0 || row.sentAt !== undefined;`,
        to: `  return row.evidence?.attemptCount !== 0;`,
      },
    ],
  },
  'lost-claim-learnt-late': {
    title:
      'a row is chosen again from a record whose claim loss was learnt after the pass decided what to read whole (W3-51)',
    file: 'shared/core/dispatcher.ts',
    edits: [
      {
        from: `        !isUnreadSinceLost(flush, pass, targetKey(row)) &&
`,
        to: '',
      },
    ],
  },
  'superseded-hops-read-again': {
    title:
      'every look at a conflict chain reads it from its first row again, so a chain that grows by one each conflict costs each look more (W3-52)',
    file: 'shared/core/predecessors.ts',
    edits: [{ from: `      hops.set(current, into);\n`, to: '' }],
  },
  'merge-past-a-later-row': {
    title:
      'an edit merges into the row last by links though a row left out was made after it, so the merged row goes first by seq (W3-54)',
    file: 'shared/plan/enqueue.ts',
    edits: [
      {
        from: `  while (chain.slice(start).some(({ row }) => row.seq !== undefined && row.seq < held))`,
        to: '  while (false)',
      },
    ],
  },
  'retry-ignores-newer-edit': {
    title:
      'retry of a blocked row made without a revision, after its successor was applied, resends it as it is',
    file: 'shared/plan/manual-actions.ts',
    edits: [
      {
        from: `    mayOvertake !== undefined &&\n    row.baseRevision == null &&`,
        to: `    false &&\n    row.baseRevision == null &&`,
      },
    ],
  },
};

/** The simulation's entry points, of the real build or of a mutant. */
export type SimModule = typeof import('./index.ts');

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Applies a mutant to a copy of the code and returns the copy's file with the edit made. */
export function mutate(name: string): string {
  const edited = mutatedFiles(name);
  const dir = join(ROOT, '.tmp', 'mutants', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const part of ['shared', 'sw', 'tests/sim', 'tests/support'])
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  for (const [path, text] of edited) writeFileSync(join(dir, path), text);
  return dir;
}

/**
 * The files a mutant edits, by path, as it leaves them; throws when the code it edits is no
 * longer there, so a broken build kept for later cannot quietly stop breaking anything.
 */
export function mutatedFiles(name: string): Map<string, string> {
  const mutant = MUTANTS[name] ?? REVERTS[name] ?? UNCAUGHT[name];
  if (!mutant) throw new Error(`no mutant ${name}`);
  const edited = new Map<string, string>();
  for (const { file: path, edits } of [mutant, ...(mutant.also ?? [])]) {
    let text = edited.get(path) ?? readFileSync(join(ROOT, path), 'utf8');
    for (const { from, to } of edits) {
      if (!text.includes(from))
        throw new Error(`mutant ${name}: ${path} no longer has the code it edits`);
      text = text.replace(from, to);
    }
    edited.set(path, text);
  }
  return edited;
}

/** Loads the simulation: the real one, or the one of a mutated copy. */
export async function loadMutant(name: string | undefined): Promise<SimModule> {
  if (name === undefined) return import('./index.ts');
  const dir = mutate(name);
  const entry = join(dir, 'tests', 'sim', 'index.ts');
  if (!existsSync(entry)) throw new Error(`mutant ${name}: the copy has no simulation`);
  return (await import(pathToFileURL(entry).href)) as SimModule;
}
