#!/usr/bin/env node
// `npm run size`: builds the library and measures the smallest real worker and page against
// SPEC §22's budgets (rollup.config.mjs, target `size`). `--modules` also prints what each module,
// folder and package adds to them, minified and as a share of the brotli bytes; `--without a,b`
// measures them with the modules whose paths contain `a` or `b` left out (after a full run), to
// see what a cut could save: `npm run size -- --without shared/plan/sha256,node_modules/idb/`.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const args = process.argv.slice(2);
const modules = args.includes('--modules');
const without = args.includes('--without') ? args[args.indexOf('--without') + 1] : undefined;
const { status } = spawnSync(join('node_modules', '.bin', 'rollup'), ['-c', '--silent'], {
  stdio: 'inherit',
  env: {
    ...process.env,
    SW_OUTBOX_BUILD: 'lib,size',
    ...(modules ? { SW_OUTBOX_SIZE_MODULES: '1' } : {}),
    ...(without ? { SW_OUTBOX_SIZE_WITHOUT: without } : {}),
  },
});
process.exit(status ?? 1);
