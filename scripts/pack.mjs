#!/usr/bin/env node
// `npm run pack`: the two published packages as tarballs, from a finished `npm run build`:
//   sw-outbox-<v>.tgz         the browser library (the root package; `files` says what ships)
//   sw-outbox-server-<v>.tgz  the reference server (server/)
// In this repository the server depends on the library as `file:..` (an npm workspace link);
// the packed server names the library's version instead, so it installs from a registry or
// next to the library's tarball. The server is packed from a staging copy, so no file in the
// work tree is rewritten. Prints the two paths; `--out <dir>` (default .tmp/pack).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Packs both packages into `out`; returns the tarballs' absolute paths. */
export function packAll(out = join(ROOT, '.tmp', 'pack')) {
  for (const built of ['dist/sw/index.js', 'dist/types', 'server/dist/cli.js']) {
    if (!existsSync(join(ROOT, built))) throw new Error(`${built} is missing: run npm run build`);
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const library = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

  const stage = join(out, 'stage', 'server');
  mkdirSync(stage, { recursive: true });
  const server = JSON.parse(readFileSync(join(ROOT, 'server', 'package.json'), 'utf8'));
  server.dependencies[library.name] = `^${library.version}`;
  delete server.devDependencies;
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(server, null, 2)}\n`);
  for (const file of ['README.md', 'LICENSE', 'dist']) {
    cpSync(join(ROOT, 'server', file), join(stage, file), { recursive: true });
  }

  const pack = (cwd) => {
    const [result] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--pack-destination', out], {
        cwd,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    return join(out, result.filename);
  };
  const paths = { library: pack(ROOT), server: pack(stage) };
  rmSync(join(out, 'stage'), { recursive: true, force: true });
  return paths;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  const paths = packAll(at > 0 ? resolve(process.argv[at + 1]) : undefined);
  console.log(paths.library);
  console.log(paths.server);
}
