import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packAll } from '../../scripts/pack.mjs';

export const ROOT = join(import.meta.dirname, '..', '..');

/** Both tarballs, packed once per test file from the finished build. */
export function packOnce(): { library: string; server: string } {
  return packAll(mkdtempSync(join(tmpdir(), 'sw-outbox-pack-')));
}

/** The file names inside a tarball, without npm's `package/` prefix. */
export function tarballFiles(tarball: string): string[] {
  return execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((path) => path.replace(/^package\//, ''));
}

/** A file's text inside a tarball. */
export function tarballText(tarball: string, path: string): string {
  return execFileSync('tar', ['-xzOf', tarball, `package/${path}`], { encoding: 'utf8' });
}

/** An installed package: its name, version, and whether it builds native code on install. */
export interface InstalledPackage {
  name: string;
  version: string;
  engines?: { node?: string };
  runsInstallScript: boolean;
}

/** Every package under a `node_modules`, nested ones included. */
export function installedPackages(nodeModules: string): InstalledPackage[] {
  const found: InstalledPackage[] = [];
  const visit = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('.')) continue;
      if (name.startsWith('@')) {
        visit(join(dir, name));
        continue;
      }
      const path = join(dir, name);
      let manifest: {
        name: string;
        version: string;
        engines?: { node?: string };
        scripts?: Record<string, string>;
        gypfile?: boolean;
      };
      try {
        manifest = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      const scripts = manifest.scripts ?? {};
      found.push({
        name: manifest.name,
        version: manifest.version,
        engines: manifest.engines,
        runsInstallScript:
          manifest.gypfile === true ||
          ['preinstall', 'install', 'postinstall'].some((hook) => hook in scripts) ||
          readdirSync(path).includes('binding.gyp'),
      });
      visit(join(path, 'node_modules'));
    }
  };
  visit(nodeModules);
  return found;
}

/** A fresh project that installs the given tarballs as an app would; removed by `dispose`. */
export function installInFreshProject(
  tarballs: string[],
  flags: string[] = [],
): { dir: string; output: string; ok: boolean; dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-app-'));
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' })}\n`,
  );
  const result = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', ...flags, ...tarballs],
    { cwd: dir, encoding: 'utf8' },
  );
  return {
    dir,
    output: `${result.stdout}\n${result.stderr}`,
    ok: result.status === 0,
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
