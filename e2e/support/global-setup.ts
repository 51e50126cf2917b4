import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * Builds the e2e bundles (worker, page, v0 fixture), the server and the library it imports
 * (`sw-outbox/wire`) once per run. `npm test`
 * builds everything first and sets SW_OUTBOX_E2E_BUILT=1 to skip this.
 */
export default function globalSetup(): void {
  if (process.env.SW_OUTBOX_E2E_BUILT === '1') return;
  const rollup = createRequire(import.meta.url).resolve('rollup/dist/bin/rollup');
  execFileSync(process.execPath, [rollup, '-c', '--silent'], {
    env: { ...process.env, SW_OUTBOX_BUILD: 'lib,e2e,server' },
    stdio: 'inherit',
  });
}
