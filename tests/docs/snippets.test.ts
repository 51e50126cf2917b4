import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The guides' TypeScript blocks compile as written (SPEC §22: guides a user copies from). Every
 * ```ts block of the guides below that is a whole module (it imports something) is written to a
 * file of its own and type-checked with the project's compiler, the package names resolving to
 * the library's source as they resolve to the built package in an app.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const GUIDES = ['switching-from-workbox.md'];
const BLOCK = /```ts\n([\s\S]*?)\n```/g;

const modules = GUIDES.flatMap((guide) =>
  [...readFileSync(join(ROOT, 'docs', guide), 'utf8').matchAll(BLOCK)]
    .map((match) => match[1] ?? '')
    .filter((block) => /^import /m.test(block))
    .map((block, i) => ({ guide, name: `${guide.replace(/\.md$/, '')}-${i + 1}.ts`, block })),
);

describe('the guides’ code', () => {
  it('has blocks to check', () => {
    expect(modules.length).toBeGreaterThanOrEqual(2);
  });

  it('type-checks as written, block by block', () => {
    const dir = join(ROOT, '.tmp', 'guide-snippets');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const { name, block } of modules) writeFileSync(join(dir, name), `${block}\n`);
    const source = (path: string) => [join(ROOT, path)];
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          lib: ['ES2022', 'WebWorker'],
          types: [],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          allowImportingTsExtensions: true,
          // Each block is a module of its own, as the file a user pastes it into.
          moduleDetection: 'force',
          paths: {
            'sw-outbox/sw': source('sw/index.ts'),
            'sw-outbox/workbox': source('sw/workbox/index.ts'),
            'sw-outbox/client': source('client/index.ts'),
            'sw-outbox/wire': source('shared/wire/protocol.ts'),
          },
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: [...modules.map((m) => m.name), join(ROOT, 'types', 'background-sync.d.ts')],
      }),
    );
    const tsc = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', dir], {
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  }, 60_000);
});
