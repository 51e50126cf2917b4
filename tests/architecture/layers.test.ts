import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkLayers, type Finding, undocumentedExports } from './layers.ts';
import { readSourceTree } from './tree.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tree = readSourceTree(root);
const show = (findings: Finding[]) => findings.map((f) => `${f.file}:${f.line} ${f.message}`);

describe('the tree follows SPEC §1', () => {
  it('has no upward import, forbidden pair, import circle or environment global in a pure layer', () => {
    expect(show(checkLayers(tree))).toEqual([]);
  });

  it('gives every export of the library a TSDoc comment', () => {
    expect(show(undocumentedExports(tree))).toEqual([]);
  });

  it('keeps nothing in shared/ outside the six layer folders but index.ts', () => {
    const loose = [...tree.keys()].filter(
      (path) => path.startsWith('shared/') && path.split('/').length === 2,
    );
    expect(loose).toEqual(['shared/index.ts']);
  });
});

/** A small tree that follows the rules; each case below breaks it in one way. */
const good: Record<string, string> = {
  'shared/model/row.ts': 'export interface Row { id: string }\n',
  'shared/plan/claim.ts':
    "import type { Row } from '../model/row.ts';\nexport const planClaim = (r: Row) => r;\n",
  'shared/core/dispatcher.ts':
    "import { planClaim } from '../plan/claim.ts';\nexport const run = planClaim;\n",
  'shared/runtime/clock.ts': 'export const systemClock = { now: () => Date.now() };\n',
  'sw/engine.ts': "import { run } from '../shared/core/dispatcher.ts';\nexport { run };\n",
};

const findings = (changes: Record<string, string>) =>
  checkLayers(new Map(Object.entries({ ...good, ...changes })));

describe('the layering check itself', () => {
  it('accepts a tree that follows the rules', () => {
    expect(findings({})).toEqual([]);
  });

  it.each<{
    breakage: string;
    changes: Record<string, string>;
    file: string;
    line: number;
    message: RegExp;
  }>([
    {
      breakage: 'an upward import (plan → core)',
      changes: {
        'shared/plan/claim.ts':
          "import { run } from '../core/dispatcher.ts';\nexport const planClaim = run;\n",
      },
      file: 'shared/plan/claim.ts',
      line: 1,
      message: /plan may not import core/,
    },
    {
      breakage: 'the wire layer reaching a planner (wire → plan): the server imports wire alone',
      changes: {
        'shared/wire/protocol.ts':
          "import { planClaim } from '../plan/claim.ts';\nexport const digest = planClaim;\n",
      },
      file: 'shared/wire/protocol.ts',
      line: 1,
      message: /wire may not import plan/,
    },
    {
      breakage: 'the wire layer reaching the dispatcher (wire → core)',
      changes: {
        'shared/wire/protocol.ts':
          "import { run } from '../core/dispatcher.ts';\nexport const digest = run;\n",
      },
      file: 'shared/wire/protocol.ts',
      line: 1,
      message: /wire may not import core/,
    },
    {
      breakage: 'a forbidden pair (sw → client)',
      changes: {
        'client/connect.ts': 'export const connect = 1;\n',
        'sw/engine.ts': "import { connect } from '../client/connect.ts';\nexport { connect };\n",
      },
      file: 'sw/engine.ts',
      line: 1,
      message: /sw may not import client/,
    },
    {
      breakage: 'an import circle of type-only imports',
      changes: {
        'shared/plan/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
        'shared/plan/b.ts': "\nimport type { A } from './a.ts';\nexport type B = A | 1;\n",
      },
      file: 'shared/plan/a.ts',
      line: 1,
      message:
        /^import circle: shared\/plan\/a\.ts:1 → shared\/plan\/b\.ts:2 → shared\/plan\/a\.ts$/,
    },
    {
      breakage: 'Date.now() in plan/',
      changes: {
        'shared/plan/claim.ts':
          "import type { Row } from '../model/row.ts';\n\nexport const planClaim = (r: Row) => ({ ...r, at: Date.now() });\n",
      },
      file: 'shared/plan/claim.ts',
      line: 3,
      message: /Date\.now\(\) in plan\//,
    },
    {
      breakage: 'fetch in core/',
      changes: { 'shared/core/send.ts': 'export const send = () => fetch("/x");\n' },
      file: 'shared/core/send.ts',
      line: 1,
      message: /fetch in core\//,
    },
    {
      breakage: 'a file in shared/ outside the layer folders',
      changes: { 'shared/helpers.ts': 'export const x = 1;\n' },
      file: 'shared/helpers.ts',
      line: 1,
      message: /shared\/ holds only index\.ts and the folders/,
    },
    {
      breakage: 'a package the layer may not use (comlink in core/)',
      changes: { 'shared/core/port.ts': "import { expose } from 'comlink';\nexport { expose };\n" },
      file: 'shared/core/port.ts',
      line: 1,
      message: /core may not import the package 'comlink'/,
    },
    {
      breakage: 'the server importing the core',
      changes: {
        'server/app.ts': "import { run } from '../shared/core/dispatcher.ts';\nexport { run };\n",
      },
      file: 'server/app.ts',
      line: 1,
      message: /server may not import core/,
    },
  ])('names the file and line of $breakage', ({ changes, file, line, message }) => {
    const found = findings(changes);
    expect(found).toContainEqual({ file, line, message: expect.stringMatching(message) });
  });

  it('ignores clocks and imports named only in comments and strings', () => {
    expect(
      findings({
        'shared/plan/claim.ts':
          "// Date.now() is the runtime's, not ours\n/** import { x } from '../core/dispatcher.ts' */\nexport const note = 'setTimeout(f)';\n",
      }),
    ).toEqual([]);
  });

  it('finds an export without TSDoc, and accepts one with it', () => {
    const docs = undocumentedExports(
      new Map([
        ['shared/plan/a.ts', '/** Documented. */\nexport const a = 1;\n\nexport function b() {}\n'],
      ]),
    );
    expect(show(docs)).toEqual(['shared/plan/a.ts:4 export b has no TSDoc comment']);
  });
});
