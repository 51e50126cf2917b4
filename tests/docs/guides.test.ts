import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The guides in docs/ show the example's real code (SPEC §22): a code block that follows an
 * `<!-- example: <path> -->` marker must be that file of the repository, byte for byte, so a
 * guide cannot drift from the example `npm test` builds and drives.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const MARKER = /<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)\n```/g;

const guides = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
const quoted = guides.flatMap((guide) =>
  [...readFileSync(join(ROOT, 'docs', guide), 'utf8').matchAll(MARKER)].map((match) => ({
    guide,
    path: match[1] ?? '',
    block: match[2] ?? '',
  })),
);

describe('the guides', () => {
  it('quote the Vite example file by file', () => {
    const files = quoted.filter((q) => q.guide === 'vite-pwa.md').map((q) => q.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'examples/vite-pwa/package.json',
        'examples/vite-pwa/vite.config.ts',
        'examples/vite-pwa/src/sw.ts',
        'examples/vite-pwa/src/main.ts',
        'examples/vite-pwa/tsconfig.sw.json',
      ]),
    );
  });

  it.each(quoted.map((q) => [`${q.guide} → ${q.path}`, q] as const))(
    'show the file as it is: %s',
    (_name, { path, block }) => {
      expect(block).toBe(readFileSync(join(ROOT, path), 'utf8').replace(/\n$/, ''));
    },
  );

  it('are each linked from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const guide of guides) expect(readme).toContain(`docs/${guide}`);
    expect(readme).toContain('docs/api/README.md');
  });
});
