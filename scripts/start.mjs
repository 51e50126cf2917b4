#!/usr/bin/env node
// `npm start` (SPEC §16): builds the demo PWA when it changed, then runs the reference server in
// this process on 127.0.0.1 with SQLite, admin routes (fault injection, effect counter) on and
// dist/demo served as static files. Prints `listening on http://127.0.0.1:<port>`.
//
//   PORT=9000 npm start                  another port (0 picks a free one)
//   npm start -- --db /tmp/notes.db      another SQLite file (default .tmp/demo.db)
//   DATABASE_URL=postgres://… npm start  PostgreSQL instead of SQLite
//   npm start -- --help                  every server option
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { buildDemo } from '../demo/build.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root);

const args = process.argv.slice(2);
const defaults = ['--admin', '--static', 'dist/demo'];
if (!args.includes('--db') && !process.env.DATABASE_URL) {
  mkdirSync('.tmp', { recursive: true });
  defaults.push('--db', '.tmp/demo.db');
}

try {
  if (!args.includes('--help') && !args.includes('-h')) await buildDemo();
  const server = await tsImport('../server/index.ts', import.meta.url);
  const options = server.parseServerArgs([...defaults, ...args], process.env);
  if (options === 'help') {
    console.log(server.USAGE);
    process.exit(0);
  }
  const running = await server.startServer(options);
  process.stderr.write(
    `demo: ${server.describeStore(options.store)} · admin routes on (loopback only) · sign in with any name\n`,
  );
  console.log(`listening on ${running.url}`);

  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  if (error?.code === 'EADDRINUSE') {
    console.error(`npm start: the port is in use. Pick another: PORT=8081 npm start`);
  } else if (error?.code === 'invalid_config') {
    console.error(`npm start: ${message}`);
  } else {
    console.error(`npm start failed: ${message}`);
    if (error?.cause) console.error(`  cause: ${String(error.cause)}`);
  }
  process.exit(1);
}
