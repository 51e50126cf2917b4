#!/usr/bin/env node
// `npm run size`: builds the library and measures the smallest real worker and page against
// SPEC §22's budgets (rollup.config.mjs, target `size`). `--modules` also prints what each module,
// folder and package adds to them, minified and as a share of the brotli bytes.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const modules = process.argv.includes('--modules');
const { status } = spawnSync(join('node_modules', '.bin', 'rollup'), ['-c', '--silent'], {
  stdio: 'inherit',
  env: {
    ...process.env,
    SW_OUTBOX_BUILD: 'lib,size',
    ...(modules ? { SW_OUTBOX_SIZE_MODULES: '1' } : {}),
  },
});
process.exit(status ?? 1);
