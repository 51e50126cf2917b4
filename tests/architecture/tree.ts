import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The library's source files (shared/, sw/, client/, server/) as repository path → text. */
export function readSourceTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules') walk(path);
      } else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) {
        files.set(relative(root, path).split('\\').join('/'), readFileSync(path, 'utf8'));
      }
    }
  };
  for (const top of ['shared', 'sw', 'client', 'server']) walk(join(root, top));
  return files;
}
