import { ConfigError, parseServerArgs, USAGE } from './config.ts';
import { startServer } from './start.ts';
import { describeStore } from './store/open.ts';

/**
 * `npm run server -- --port <n> --db <path | :memory: | postgres://…>` (SPEC §15). Prints exactly
 * `listening on http://127.0.0.1:<port>` on stdout once it accepts connections (tools wait for
 * that line); everything else goes to stderr.
 */
async function main(): Promise<void> {
  let options: ReturnType<typeof parseServerArgs>;
  try {
    options = parseServerArgs(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const description = describeStore(options.store);
  const server = await startServer(options);
  process.stderr.write(`store: ${description}${options.admin ? ' · admin routes on' : ''}\n`);
  process.stdout.write(`listening on ${server.url}\n`);

  let closing = false;
  const shutdown = () => {
    if (closing) return;
    closing = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `server failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  if (error instanceof Error && error.cause)
    process.stderr.write(`  cause: ${String(error.cause)}\n`);
  process.exit(1);
});
