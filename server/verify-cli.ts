import { verifyMain } from './verify/cli.ts';

/** The `sw-outbox-verify` bin: `sw-outbox-verify <base-url> [options]` (see `--help`). */
process.exitCode = await verifyMain(process.argv.slice(2));
