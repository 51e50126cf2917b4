import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  installedPackages,
  installInFreshProject,
  packOnce,
  ROOT,
  tarballFiles,
  tarballText,
} from './packed.ts';

/**
 * SPEC §22: two packages. The browser library installs only browser packages; the reference
 * server is its own package with a `bin`; each ships built code, types, README and LICENSE and
 * nothing else; both are publint-clean and their types resolve (arethetypeswrong, ESM only).
 */

/** What an app that installs the library may get: its dependencies and theirs. */
const BROWSER_PACKAGES = new Set([
  'sw-outbox',
  'idb',
  'comlink',
  'zod',
  'workbox-window',
  'workbox-core',
  '@types/trusted-types',
]);

let packed: { library: string; server: string };

beforeAll(() => {
  packed = packOnce();
});
afterAll(() => {
  if (packed) rmSync(dirname(packed.library), { recursive: true, force: true });
});

describe('the library tarball', () => {
  it('holds the built code, its types, README and LICENSE, and nothing of tests, e2e or benchmarks', () => {
    const files = tarballFiles(packed.library);
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE']));
    for (const entry of ['sw', 'client', 'shared']) {
      expect(files).toContain(`dist/${entry}/index.js`);
      expect(files).toContain(`dist/types/${entry}/index.d.ts`);
    }
    expect(files).toContain('dist/shared/wire/protocol.js');
    const stray = files.filter(
      (path) =>
        /(^|\/)(e2e|bench|tests?|size|demo|server)\//.test(path) ||
        /\.(map|test\.[jt]s|tgz|db)$/.test(path),
    );
    expect(stray).toEqual([]);
  });

  it('installs with production dependencies only as browser packages: no server, no native module', () => {
    const app = installInFreshProject([packed.library], ['--omit=dev']);
    try {
      expect(app.ok, app.output).toBe(true);
      const installed = installedPackages(join(app.dir, 'node_modules'));
      const names = installed.map((p) => p.name);
      for (const nodeOnly of [
        'better-sqlite3',
        'fastify',
        'pg',
        'sw-outbox-server',
        'express',
        'hono',
        '@hono/node-server',
      ]) {
        expect(names).not.toContain(nodeOnly);
      }
      expect(names.filter((name) => !BROWSER_PACKAGES.has(name))).toEqual([]);
      expect(installed.filter((p) => p.runsInstallScript).map((p) => p.name)).toEqual([]);
      expect(app.output).not.toMatch(/EBADENGINE|install-scripts/);
    } finally {
      app.dispose();
    }
  });
});

describe('the server tarball', () => {
  it('depends on the library by version, not by a path into this repository', () => {
    const manifest = JSON.parse(tarballText(packed.server, 'package.json'));
    const library = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(manifest.dependencies['sw-outbox']).toBe(`^${library.version}`);
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.bin).toEqual({
      'sw-outbox-server': './dist/cli.js',
      'sw-outbox-verify': './dist/verify.js',
    });
  });

  it('holds its built code, types, README and LICENSE, and a bin that runs with node', () => {
    const files = tarballFiles(packed.server);
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'LICENSE', 'dist/cli.js', 'dist/types/index.d.ts']),
    );
    expect(files.filter((path) => /\.map$|\.ts$/.test(path) && !path.endsWith('.d.ts'))).toEqual(
      [],
    );
    expect(tarballText(packed.server, 'dist/cli.js').startsWith('#!/usr/bin/env node\n')).toBe(
      true,
    );
    expect(tarballText(packed.server, 'README.md')).toContain('POST /auth/login');
  });
});

describe('the server bin', () => {
  const bin = join(ROOT, 'server', 'dist', 'cli.js');
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGTERM');
  });

  it('names itself in its usage line', () => {
    const help = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    expect(help.stdout.split('\n')[0]).toBe('usage: sw-outbox-server [options]');
  });

  it('starts the server and prints listening on http://127.0.0.1:<port>', async () => {
    child = spawn(process.execPath, [bin, '--port', '0', '--db', ':memory:'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      child?.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
      });
      child?.stderr?.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      child?.once('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
    });
    expect(line).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
    const login = await fetch(`${line.slice('listening on '.length)}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'alice' }),
    });
    expect(login.status).toBe(200);
    expect(await login.json()).toMatchObject({ token: expect.any(String) });
  });
});

describe('package linters', () => {
  const run = (command: string, args: string[]) =>
    spawnSync(join(ROOT, 'node_modules', '.bin', command), args, { encoding: 'utf8' });

  it.each(['library', 'server'] as const)('publint finds nothing in the %s tarball', (which) => {
    const result = run('publint', ['--strict', packed[which]]);
    expect(result.status, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('All good!');
  });

  it.each(['library', 'server'] as const)(
    'arethetypeswrong resolves every entry of the %s tarball as ESM',
    (which) => {
      const result = run('attw', [packed[which], '--profile', 'esm-only', '--format', 'json']);
      expect(result.status, result.stdout + result.stderr).toBe(0);
    },
  );
});
